"""Every name the documentation gives exists in the code: a reader who takes a variable, a bucket, a
subject, a reason, a kind or an ``aimctl`` command from the README, a page under ``docs/``, an
alert's text (``deploy/components/monitoring``) or a description of the bus contract
(``docs/asyncapi.yaml``) finds it. What is recognised as each kind of name,
and what it is compared with (:mod:`tests.unit.docs.codenames` says where the code declares each):

- a variable: any word ``AIM_…`` in prose or code: a variable of the settings classes, a stream
  (``AIM_EVENTS``), or a word of the sources' constants (the variables the operator sets on the
  containers it deploys, the development tools' and tests' own); ``AIM_OUTBOUND_`` names the family
  of variables starting with it, and ``AIM_OCI_PULL_SECRET_0`` one of a numbered family;
- an ``aim-`` name in a code span (``aim-objects``, ``aim-bus-tls``, ``aim-download``; one after a
  ``/`` or ``.`` is part of a path, an image or a subject): a KV bucket or a word of the sources'
  constants (``aim-bus-<role>`` a family of them); and a name in a bucket's context (KV
  ``aim-leases``, ``$KV.aim-objects.>``, the ``aim-watcher`` bucket) is a bucket the topology
  declares;
- a subject in a code span (``aim.status.{service}.…``, any ``aim.<word>.`` that is not an API
  group): its prefix is one of the bus contract's, and it has as many tokens as the contract's
  layout, unless a wildcard (``>``) or an ellipsis ends it early;
- a condition reason: ``Type=Status/Reason`` in a code span, and a code span right after the word
  *reason*: the reason is one the status rules or the reason table know, or a word of the sources'
  constants (an LLMKube Model's reasons, a stand-in's); the type likewise;
- a kind: any word ``AIM<Capital>…`` (an ``s`` added for a plural): a kind of our CRDs, a class of
  their models, or an alert of the monitoring component;
- an ``aimctl`` command in a code span (after ``uv run`` if any, up to a pipe or a redirection):
  its subcommands are aimctl's (from its own parser), each flag is one that subcommand takes, and a
  value of a flag or positional with choices is one of them. A span may leave out what a command
  requires (``aimctl describe`` names the command); code blocks are parsed whole
  (test_doc_commands).

A name that refers to something outside this code (the original operator's, KServe's, KEDA's) is
listed in :data:`ELSEWHERE` with the reason; nothing else is waived. Each check has a test below that
plants a stale name and finds it."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from aimcore.api import kinds
from tests.sources import ROOT
from tests.unit.docs import codenames
from tests.unit.docs.documents import ALERT_RULES, Documents, Stale, report
from tests.unit.docs.shell import simple_commands

# Names the docs give that are not this code's, each with what it is.
ELSEWHERE: dict[str, str] = {
    "AIM_GATEWAY_ACTIVATION_SCOPE": "the released original's later (0.2.6-era) setting, named as not built",
    "RouteConfigReady": "the released original's (0.2.5) condition, beside ours (HTTPRouteReady)",
    "aim-dirty": "the dirty-mark bucket issue 20 removed, in the benchmarks' history",
}

VARIABLE = re.compile(r"\bAIM_[A-Z0-9_]+")
AIM_NAME = re.compile(r"(?<![\w./$@:-])aim(?:-[a-z0-9]+)+-?(?![\w/])")
BUCKET_CONTEXT = re.compile(
    r"\bKV\b[^`\n]{0,12}`(aim-[a-z0-9-]+)`|\bbucket\s+`(aim-[a-z0-9-]+)`|`(aim-[a-z0-9-]+)`\s+bucket\b"
    r"|\$KV\.(aim-[a-z0-9-]+)"
)
SUBJECT = re.compile(
    r"(?<![\w.$-])(?!"
    + "|".join(re.escape(group) for group in kinds.AIM_GROUPS)
    + r")aim\.[a-z]+\.[^\s`,;)]*"
)
CONDITION = re.compile(r"\b([A-Z]\w*)=(?:True|False|Unknown)/([A-Z]\w*)\b")
REASON_SPAN = re.compile(r"\breasons?\s+`([A-Z][A-Za-z0-9]*)`")
KIND = re.compile(r"\bAIM[A-Z][A-Za-z0-9]*\b")
AIMCTL = re.compile(r"^(?:sudo (?:-E )?)?(?:(?:python3? -m )?uv run )?aimctl ")
OPEN_ENDED = {">", "…", "..."}


class Names:
    """The names a checkout's documentation gives, and those the code lacks."""

    def __init__(self, docs: Documents, root: Path) -> None:
        self.docs = docs
        self.root = root

    def variables(self) -> list[Stale]:
        declared = codenames.settings() | codenames.streams()
        return [
            Stale(piece.where, f"{name}: no setting, stream or variable the code reads")
            for piece in self.docs.everything()
            for name in VARIABLE.findall(piece.text)
            if not self._known(name, declared, "_")
        ]

    def aim_names(self) -> list[Stale]:
        return [
            Stale(span.where, f"{name}: not a name the code defines")
            for span in self.docs.spans()
            for name in AIM_NAME.findall(span.text)
            if not self._known(name, codenames.buckets(), "-")
        ]

    def buckets(self) -> list[Stale]:
        known = codenames.buckets()
        return [
            Stale(where, f"{name}: no such KV bucket (the topology declares {', '.join(sorted(known))})")
            for where, match in self.docs.find(BUCKET_CONTEXT)
            for name in filter(None, match.groups())
            if name not in known and name not in ELSEWHERE
        ]

    def subjects(self) -> list[Stale]:
        layouts = codenames.subject_layouts()
        stale = []
        for span in self.docs.spans():
            for subject in SUBJECT.findall(span.text):
                problem = _subject_problem(subject, layouts)
                if problem:
                    stale.append(Stale(span.where, f"{subject}: {problem}"))
        return stale

    def reasons(self) -> list[Stale]:
        reasons, types = codenames.reasons(), codenames.condition_types()
        found = [
            (span.where, name, known)
            for span in self.docs.spans()
            for condition, reason in CONDITION.findall(span.text)
            for name, known in ((condition, types), (reason, reasons))
        ]
        found += [(where, match.group(1), reasons) for where, match in self.docs.find(REASON_SPAN)]
        return [
            Stale(where, f"{name}: no condition type or reason the code has")
            for where, name, known in found
            if not self._known(name, known, "")
        ]

    def kinds(self) -> list[Stale]:
        known = codenames.kind_names(self.root) | codenames.alert_names(self.root)
        return [
            Stale(piece.where, f"{name}: no kind of our CRDs, class of their models or alert")
            for piece in self.docs.everything()
            for name in KIND.findall(piece.text)
            if name not in known and name.removesuffix("s") not in known and name not in ELSEWHERE
        ]

    def _known(self, name: str, declared: frozenset[str], separator: str) -> bool:
        """Whether ``name`` is declared, a word of the sources' constants or listed in
        :data:`ELSEWHERE`; a name ending in ``separator`` is a family's prefix (``AIM_OUTBOUND_``) and
        known when a known name starts with it, and one ending in digits after it a numbered member
        of a known family (``AIM_OCI_PULL_SECRET_0``)."""
        constants = codenames.constants(self.root)
        if name in declared or name in ELSEWHERE or constants.has(name):
            return True
        if separator and name.endswith(separator):
            return any(other.startswith(name) for other in declared) or constants.has_prefix(name)
        family = name.rstrip("0123456789")
        return bool(separator) and family != name and family.endswith(separator) and constants.has(family)

    def commands(self) -> list[Stale]:
        stale = []
        for span in self.docs.spans():
            if not AIMCTL.match(span.text):
                continue
            try:
                argv = simple_commands(span.text)[0][1:]
            except ValueError as exc:
                stale.append(Stale(span.where, f"{span.text}: does not tokenise ({exc})"))
                continue
            problem = aimctl_problem(codenames.aimctl(), argv)
            if problem:
                stale.append(Stale(span.where, f"{span.text}: {problem}"))
        return stale


def _subject_problem(subject: str, layouts: dict[str, int]) -> str | None:
    """What is wrong with a subject the docs give: an unknown prefix, or too many or too few tokens
    for its layout (a wildcard or an ellipsis may end it early)."""
    tokens = subject.rstrip(".:").split(".")
    prefix = ".".join(tokens[:2])
    if prefix not in layouts:
        return f"no subject prefix {prefix} in the bus contract ({', '.join(sorted(layouts))})"
    rest = tokens[2:]
    ends = next((i for i, token in enumerate(rest) if token in OPEN_ENDED or "…" in token), None)
    expected = layouts[prefix]
    if ends is None and len(rest) != expected:
        return f"{len(rest)} tokens after {prefix}, the bus contract has {expected}"
    if ends is not None and ends > expected:
        return f"{ends} tokens after {prefix} before its end, the bus contract has {expected}"
    return None


def aimctl_problem(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """What is not aimctl's in ``argv``: a subcommand, a flag or a choice; what it leaves out is not
    asked for."""
    words = list(argv)
    command = [parser.prog]
    while (choices := codenames.subcommands(parser)) and words and not words[0].startswith("-"):
        name = words.pop(0)
        if name not in choices:
            return f"{' '.join(command)} has no command {name!r} ({', '.join(choices)})"
        parser = choices[name]
        command.append(name)
    positionals = [a for a in parser._actions if not a.option_strings and a.dest != argparse.SUPPRESS]
    while words and words[0] not in OPEN_ENDED:
        word = words.pop(0).removeprefix("[").removesuffix("]")  # a synopsis' [--optional]
        if word.startswith("-") and word != "-":
            flag, has_value, value = word.partition("=")
            action = parser._option_string_actions.get(flag)
            if action is None:
                return f"{' '.join(command)} has no option {flag}"
            if action.nargs == 0:
                continue
            given = value if has_value else (words.pop(0) if words and not words[0].startswith("-") else None)
        elif positionals:
            action, given = positionals.pop(0), word
        else:
            return f"{' '.join(command)} takes no argument {word!r}"
        if given is not None and action.choices is not None and given not in action.choices:
            named = action.option_strings[0] if action.option_strings else action.dest
            return f"{given!r} is not one of {' '.join(command)} {named}'s choices"
    return None


NAMES = Names(Documents(ROOT), ROOT)
Check = Callable[[Names], list[Stale]]
CHECKS: dict[str, Check] = {
    "variables": Names.variables,
    "aim_names": Names.aim_names,
    "buckets": Names.buckets,
    "subjects": Names.subjects,
    "reasons": Names.reasons,
    "kinds": Names.kinds,
    "commands": Names.commands,
}


@pytest.mark.parametrize("check", CHECKS)
def test_every_name_the_docs_give_exists(check: str) -> None:
    stale = CHECKS[check](NAMES)
    assert not stale, report(stale)


# What each check recognises, counted in the docs: a pattern that matched nothing would pass its check.
RECOGNISED: dict[str, Callable[[Documents], int]] = {
    "variables": lambda docs: sum(len(VARIABLE.findall(p.text)) for p in docs.everything()),
    "aim_names": lambda docs: sum(len(AIM_NAME.findall(s.text)) for s in docs.spans()),
    "buckets": lambda docs: sum(1 for _ in docs.find(BUCKET_CONTEXT)),
    "subjects": lambda docs: sum(len(SUBJECT.findall(s.text)) for s in docs.spans()),
    "reasons": lambda docs: sum(len(CONDITION.findall(s.text)) for s in docs.spans()),
    "kinds": lambda docs: sum(len(KIND.findall(p.text)) for p in docs.everything()),
    "commands": lambda docs: sum(1 for s in docs.spans() if AIMCTL.match(s.text)),
}


@pytest.mark.parametrize("check", CHECKS)
def test_every_check_recognises_names_in_the_docs(check: str) -> None:
    assert RECOGNISED[check](NAMES.docs) > 0


def test_the_allowances_are_used() -> None:
    """Every name of :data:`ELSEWHERE` is still in the docs (a stale allowance hides nothing)."""
    text = "\n".join(piece.text for piece in NAMES.docs.everything())
    assert [name for name in ELSEWHERE if name not in text] == []


# -- the checker itself, on documents made for it -------------------------------------------------


@pytest.fixture
def made(tmp_path: Path) -> Names:
    (tmp_path / "docs").mkdir()
    return Names(Documents(tmp_path), ROOT)


def found(names: Names, check: Check, text: str) -> list[str]:
    (names.docs.root / "docs" / "page.md").write_text(text)
    return [str(s) for s in check(names)]


def lines(*texts: str) -> str:
    return "\n\n".join(texts) + "\n"


def test_a_stale_variable_is_found(made: Names) -> None:
    text = lines(
        "`AIM_NATS_URL`, `AIM_EVENTS`, `AIM_MODEL_ID`, `AIM_OUTBOUND_*`, `AIM_OCI_PULL_SECRET_0`,",
        "```yaml\n- name: AIM_NATS_URI\n```",
        "`AIM_OUTBAND_` and $AIM_HOMES",
    )
    assert found(made, Names.variables, text) == [
        "docs/page.md:7: AIM_OUTBAND_: no setting, stream or variable the code reads",
        "docs/page.md:7: AIM_HOMES: no setting, stream or variable the code reads",
        "docs/page.md:4: AIM_NATS_URI: no setting, stream or variable the code reads",
    ]


def test_a_stale_aim_name_or_bucket_is_found(made: Names) -> None:
    text = lines(
        "KV `aim-leases`, the `aim-watcher` bucket, `$KV.aim-objects.>`, `aim-bus-<role>`, `aim-download`,",
        "`amdenterpriseai/aim-base:0.8.5`, `kubectl -n aim-system logs deploy/aim-watcher`,",
        "the KV mirror (`aim-mirror`), KV `aim-status`, `$KV.aim-marks.>`, `aim-bus-tsl`",
    )
    assert found(made, Names.aim_names, text) == [
        "docs/page.md:5: aim-mirror: not a name the code defines",
        "docs/page.md:5: aim-bus-tsl: not a name the code defines",
    ]
    assert [s.partition(" (")[0] for s in found(made, Names.buckets, text)] == [
        "docs/page.md:5: aim-mirror: no such KV bucket",
        "docs/page.md:5: aim-status: no such KV bucket",
        "docs/page.md:5: aim-marks: no such KV bucket",
    ]


def test_a_stale_subject_is_found(made: Names) -> None:
    text = lines(
        "`aim.events.{group}.{Kind}.{namespace\\|_}.{name}`, `aim.status.<service>.…`, `aim.events.>`,",
        "`aim.decisions.{service}.{group}.{Kind}.{ns}.{name}`, `aim.eai.amd.com/model`, `aim.silogen.ai`,",
        "`aim.status.{group}.{Kind}.{ns}.{name}`, `aim.audit.>`, `aim.requeue.a.b.c.d.e.f.…`",
    )
    assert [s.partition(" (")[0] for s in found(made, Names.subjects, text)] == [
        "docs/page.md:5: aim.status.{group}.{Kind}.{ns}.{name}: 4 tokens after aim.status, the bus "
        "contract has 5",
        "docs/page.md:5: aim.audit.>: no subject prefix aim.audit in the bus contract",
        "docs/page.md:5: aim.requeue.a.b.c.d.e.f.…: 6 tokens after aim.requeue before its end, the bus "
        "contract has 5",
    ]


def test_a_stale_reason_or_condition_is_found(made: Names) -> None:
    text = lines(
        "`ConfigValid=False/InvalidSpec`, `Ready=True/AllComponentsReady`, reason `ObjectTooLarge`,",
        "`DownloadReady=False/PvcCreateRejected`, `Ready=False/InvalidSpecs`,",
        "`ConfigValidity=False/InvalidSpec`,",
        "reasons `NoSuchReason` and `InvalidSpec`",
    )
    assert found(made, Names.reasons, text) == [
        "docs/page.md:3: InvalidSpecs: no condition type or reason the code has",
        "docs/page.md:5: ConfigValidity: no condition type or reason the code has",
        "docs/page.md:7: NoSuchReason: no condition type or reason the code has",
    ]


def test_a_stale_kind_is_found(made: Names) -> None:
    text = lines(
        "An AIMService, two AIMServices, an AIMClusterModelSourceSpec, the alert AIMNoWatcherLeader,",
        "```yaml\nkind: AIMServise\n```",
        "an AIMImageSource",
    )
    assert found(made, Names.kinds, text) == [
        "docs/page.md:7: AIMImageSource: no kind of our CRDs, class of their models or alert",
        "docs/page.md:4: AIMServise: no kind of our CRDs, class of their models or alert",
    ]


def test_a_stale_aimctl_command_in_prose_is_found(made: Names) -> None:
    text = lines(
        "`aimctl events --source deployer`, `uv run aimctl describe`,",
        "`aimctl bus spec > docs/asyncapi.yaml`,",
        "`aimctl up --node --demo --model gemma3-270m`, `aimctl bench scale`, `aimctl events`/`describe`,",
        "`aimctl up --node [--demo] [--detach]`, `aimctl bench …`, `aimctl up [--demoo]`,",
        "`aimctl audit`, `aimctl audit history`, `aimctl events --sauce x`, `aimctl up/down`,",
        "`aimctl bench inference --model gpt`, `aimctl bench speed`, `aimctl bus spec extra`",
    )
    commands = f"({', '.join(codenames.subcommands(codenames.aimctl()))})"
    assert [s.rpartition(": ")[2] for s in found(made, Names.commands, text)] == [
        "aimctl up has no option --demoo",
        f"aimctl has no command 'audit' {commands}",
        f"aimctl has no command 'audit' {commands}",
        "aimctl events has no option --sauce",
        f"aimctl has no command 'up/down' {commands}",
        "'gpt' is not one of aimctl bench --model's choices",
        "'speed' is not one of aimctl bench suite's choices",
        "aimctl bus spec takes no argument 'extra'",
    ]


def test_an_alert_text_is_read(tmp_path: Path) -> None:
    rules = tmp_path / "deploy" / "components" / "monitoring" / "prometheusrule.yaml"
    rules.parent.mkdir(parents=True)
    rules.write_text(
        "spec:\n  groups:\n    - rules:\n        - alert: AIMNoWatcherLeader\n          annotations:\n"
        "            summary: x\n            description: >-\n              Check their Lease and find the"
        " source\n              with `aimctl\n              audit`.\n"
    )
    names = Names(Documents(tmp_path), ROOT)
    assert [str(s).partition(" (")[0] for s in names.commands()] == [
        f"{ALERT_RULES}:AIMNoWatcherLeader description: aimctl audit: aimctl has no command 'audit'"
    ]


def test_every_check_is_run(made: Names) -> None:
    """The parametrised test runs each of the checker's checks."""
    public: Iterable[str] = (name for name in vars(Names) if not name.startswith("_"))
    assert set(CHECKS) == set(public)
