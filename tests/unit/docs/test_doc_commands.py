"""Every command the documentation shows in a code block is one its program takes: a reader who
copies it gets the command, not a usage error. The command lines are read as
:mod:`tests.unit.docs.shell` says (``sh``/``bash``/``shell`` blocks, and the prompted lines of
``console`` blocks), and checked without running anything:

- every line tokenises as a shell's (shlex: no unclosed quote);
- ``aimctl``: the whole command parses with aimctl's own parser (:func:`aimctl.main.parser`, the one
  ``aimctl`` runs): its subcommands, flags, the values of flags with choices, required arguments;
  and the kind an ``events`` or ``describe`` target names (``aimsvc/chat``) is one aimctl resolves
  (:func:`aimctl.audit.query.resolve_kind`);
- ``kubectl``: its command is one of kubectl's (:data:`KUBECTL_COMMANDS`, written out here: kubectl is
  not a Python program to ask, and the one on the machine may be missing); a resource of ours it
  names (``aimsvc``, ``aimmodelcaches``, ``models.inference.llmkube.dev``) is a name our CRDs give
  kubectl (``deploy/crds``); and ``rollout status`` names one object (``TYPE/NAME``, ``TYPE NAME`` or
  a file), the form kubectl before 1.24 requires (it refuses a collection such as ``deploy``);
- ``kustomize``: its command is one of kustomize's (:data:`KUSTOMIZE_COMMANDS`);
- ``curl``: it names a URL to fetch.

Other programs (docker, jq, the repository's scripts) are only tokenised. A repository path a command
names is checked with every other path the docs name (test_doc_references). Each check has a test
below that plants a broken command and finds it."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aimctl.audit.query import KindError, resolve_kind
from tests.sources import ROOT
from tests.unit.docs import codenames
from tests.unit.docs.documents import Documents, Piece, Stale, report
from tests.unit.docs.shell import command_lines, simple_commands

# kubectl's own commands, 1.20 to 1.32 (`kubectl --help`); `events` came in 1.26.
KUBECTL_COMMANDS = frozenset(
    {
        "annotate", "api-resources", "api-versions", "apply", "attach", "auth", "autoscale",
        "certificate", "cluster-info", "completion", "config", "cordon", "cp", "create", "debug",
        "delete", "describe", "diff", "drain", "edit", "events", "exec", "explain", "expose", "get",
        "kustomize", "label", "logs", "options", "patch", "plugin", "port-forward", "proxy", "replace",
        "rollout", "run", "scale", "set", "taint", "top", "uncordon", "version", "wait",
    }
)  # fmt: skip
# kubectl's global flags that take a value, which may come before its command (`kubectl -n ns get`).
KUBECTL_VALUE_FLAGS = frozenset(
    {"-n", "--namespace", "--kubeconfig", "--context", "--cluster", "--user", "-s", "--server", "--as"}
)
# The flags after kubectl's command that take a value, so that a value is not read as a resource.
KUBECTL_COMMAND_VALUE_FLAGS = KUBECTL_VALUE_FLAGS | frozenset(
    {"-o", "--output", "-l", "--selector", "-f", "--filename", "-k", "-p", "--patch", "--type", "-c"}
)
# kubectl's commands whose first argument is a resource type (or TYPE/NAME).
KUBECTL_RESOURCE_COMMANDS = frozenset(
    {"get", "describe", "delete", "edit", "patch", "label", "annotate", "scale", "wait", "explain"}
)
# kustomize's own commands (kustomize 5, `kustomize --help`).
KUSTOMIZE_COMMANDS = frozenset({"build", "cfg", "completion", "create", "edit", "fn", "localize", "version"})
OUR_GROUPS = re.compile(
    r"^aim[a-z]*(?:\.|$)|\.(?:aim\.eai\.amd\.com|aim\.silogen\.ai|inference\.llmkube\.dev)$"
)
URL = re.compile(r"^(?:https?://|localhost[:/]|\d+\.\d+\.\d+\.\d+[:/]|\$)")


@dataclass(frozen=True)
class Command:
    """One simple command of a docs code block, and where it is."""

    where: str
    words: tuple[str, ...]


class Commands:
    """The commands of a checkout's documentation, and what is wrong with them."""

    def __init__(self, docs: Documents, root: Path) -> None:
        self.docs = docs
        self.root = root

    def lines(self) -> Iterator[Piece]:
        for block in self.docs.blocks():
            yield from command_lines(block)

    def commands(self) -> Iterator[Command]:
        for line in self.lines():
            try:
                found = simple_commands(line.text)
            except ValueError:
                continue  # tokenise() reports it
            for words in found:
                yield Command(line.where, tuple(words))

    # -- checks ---------------------------------------------------------------------------------

    def tokenise(self) -> list[Stale]:
        stale = []
        for line in self.lines():
            try:
                simple_commands(line.text)
            except ValueError as exc:
                stale.append(Stale(line.where, f"does not tokenise as a shell's ({exc}): {line.text}"))
        return stale

    def aimctl(self) -> list[Stale]:
        return [
            Stale(c.where, f"{' '.join(c.words)}: {problem}")
            for c in self.commands()
            if c.words[0] == "aimctl" and (problem := aimctl_refuses(list(c.words[1:])))
        ]

    def kubectl(self) -> list[Stale]:
        known = codenames.resource_names()
        return [
            Stale(c.where, f"{' '.join(c.words)}: {problem}")
            for c in self.commands()
            if c.words[0] == "kubectl" and (problem := kubectl_refuses(list(c.words[1:]), known))
        ]

    def kustomize(self) -> list[Stale]:
        stale = []
        for c in self.commands():
            if c.words[0] == "kustomize" and (len(c.words) < 2 or c.words[1] not in KUSTOMIZE_COMMANDS):
                stale.append(Stale(c.where, f"{' '.join(c.words)}: no kustomize command"))
        return stale

    def curl(self) -> list[Stale]:
        return [
            Stale(c.where, f"{' '.join(c.words)}: names no URL")
            for c in self.commands()
            if c.words[0] == "curl" and not any(URL.match(word) for word in c.words[1:])
        ]


def aimctl_refuses(argv: list[str]) -> str | None:
    """What aimctl's parser says of ``argv`` (its usage error), or what aimctl says of the kind its
    target names (``events``' and ``describe``'s ``KIND/NAME``); None if it parses. Nothing runs, and
    ``--help`` parses."""
    parser = codenames.aimctl()
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            return errors.getvalue().strip().splitlines()[-1] if exc.code else None
    target = getattr(args, "target", None)
    try:
        if target:
            resolve_kind(target.partition("/")[0])
    except KindError as exc:
        return str(exc).partition(";")[0]
    return None


def kubectl_refuses(argv: list[str], resources: frozenset[str]) -> str | None:
    """What is wrong with ``kubectl ARGV``: no such command, a resource of ours that our CRDs do not
    name, or a ``rollout status`` of no single object; None if nothing."""
    words = arguments(argv)
    if not words:
        return "no kubectl command"
    command, *rest = words
    if command not in KUBECTL_COMMANDS:
        return f"{command!r} is no kubectl command"
    if command == "rollout":
        if rest[:1] == ["status"] and len(rest) < 3 and "/" not in "".join(rest[1:2]) and not has_file(argv):
            return "rollout status names no single object (TYPE/NAME or TYPE NAME)"
        return None
    if command in KUBECTL_RESOURCE_COMMANDS and rest:
        for resource in rest[0].split("/", 1)[0].split(","):
            if OUR_GROUPS.search(resource) and resource not in resources:
                return f"no resource {resource!r} among our CRDs' names"
    return None


def arguments(argv: list[str]) -> list[str]:
    """kubectl's words that are not flags nor the values of its flags that take one."""
    words = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word.startswith("-") and word != "-":
            skip = "=" not in word and word in KUBECTL_COMMAND_VALUE_FLAGS
        else:
            words.append(word)
    return words


def has_file(argv: list[str]) -> bool:
    return any(word.split("=", 1)[0] in {"-f", "--filename", "-k", "--kustomize"} for word in argv)


COMMANDS = Commands(Documents(ROOT), ROOT)


def test_every_command_line_tokenises() -> None:
    stale = COMMANDS.tokenise()
    assert not stale, report(stale)


def test_every_aimctl_command_parses() -> None:
    stale = COMMANDS.aimctl()
    assert not stale, report(stale)


def test_every_kubectl_command_is_kubectls() -> None:
    stale = COMMANDS.kubectl()
    assert not stale, report(stale)


def test_every_kustomize_command_is_kustomizes() -> None:
    stale = COMMANDS.kustomize()
    assert not stale, report(stale)


def test_every_curl_names_a_url() -> None:
    stale = COMMANDS.curl()
    assert not stale, report(stale)


def test_the_docs_show_commands_of_each_program() -> None:
    """The checks above see the docs' commands (a reader that found none would pass them all)."""
    programs = {c.words[0] for c in COMMANDS.commands()}
    assert {"aimctl", "kubectl", "kustomize", "curl"} <= programs


# -- the checker itself, on documents made for it -------------------------------------------------


@pytest.fixture
def made(tmp_path: Path) -> Commands:
    (tmp_path / "docs").mkdir()
    return Commands(Documents(tmp_path), ROOT)


def page(commands: Commands, text: str) -> None:
    (commands.docs.root / "docs" / "page.md").write_text(text)


def test_which_lines_are_commands(made: Commands) -> None:
    page(
        made,
        "```sh\nkubectl get aimsvc \\\n  -n team   # a comment\nkubectl apply -f - <<'YAML'\n"
        "kind: AIMService\nYAML\nfor s in a b; do uv run aimctl events --source $s; done\n```\n\n"
        "```console\n$ kubectl get aimsvc\nNAME  STATUS\n```\n\n```\n$ not a command\n```\n",
    )
    assert [(c.where, c.words) for c in made.commands()] == [
        ("docs/page.md:2", ("kubectl", "get", "aimsvc", "-n", "team")),
        ("docs/page.md:4", ("kubectl", "apply", "-f", "-")),
        ("docs/page.md:7", ("for", "s", "in", "a", "b")),
        ("docs/page.md:7", ("aimctl", "events", "--source", "$s")),
        ("docs/page.md:7", ("done",)),
        ("docs/page.md:11", ("kubectl", "get", "aimsvc")),
    ]


def test_a_line_that_does_not_tokenise_is_found(made: Commands) -> None:
    page(made, "```sh\nkubectl get aimsvc -o jsonpath='{.items}\n```\n")
    assert [s.where for s in made.tokenise()] == ["docs/page.md:2"]


def test_an_aimctl_command_that_does_not_parse_is_found(made: Commands) -> None:
    page(
        made,
        "```sh\naimctl events --source deployer\naimctl audit history\nsudo -E uv run aimctl up --node "
        "--model nope\naimctl events --sauce deployer\naimctl bus spec > docs/asyncapi.yaml\n"
        "aimctl describe --history 5\naimctl caches --help\naimctl describe aimsvcs/chat\n"
        "aimctl events aimtpl -f\n```\n",
    )
    assert [(s.where, s.what.partition(": ")[2].partition(" (choose")[0]) for s in made.aimctl()] == [
        ("docs/page.md:3", "aimctl: error: argument command: invalid choice: 'audit'"),
        ("docs/page.md:4", "aimctl up: error: argument --model: invalid choice: 'nope'"),
        ("docs/page.md:5", "aimctl: error: unrecognized arguments: --sauce"),
        ("docs/page.md:7", "aimctl describe: error: the following arguments are required: target"),
        ("docs/page.md:9", "unknown kind 'aimsvcs'"),
    ]


def test_a_kubectl_command_kubectl_refuses_is_found(made: Commands) -> None:
    page(
        made,
        "```sh\nkubectl -n aim-system rollout status deploy\nkubectl rollout status deploy/aim-watcher\n"
        "kubectl rollout status deploy aim-status\nkubectl get aimsvcs -n team\nkubectl get aimsvc,aimtpl\n"
        "kubectl -n x get aimservices.aim.silogen.ai\nkubectl -n aim-system scale deploy/aim-watcher\n"
        "kubectl gett pods\nkubectl get models.inference.llmkube.dev\n"
        "kubectl describe aimmodel.aim.example\n```\n",
    )
    assert [(s.where, s.what.rpartition(": ")[2]) for s in made.kubectl()] == [
        ("docs/page.md:2", "rollout status names no single object (TYPE/NAME or TYPE NAME)"),
        ("docs/page.md:5", "no resource 'aimsvcs' among our CRDs' names"),
        ("docs/page.md:9", "'gett' is no kubectl command"),
        ("docs/page.md:11", "no resource 'aimmodel.aim.example' among our CRDs' names"),
    ]


def test_a_kustomize_or_curl_command_that_is_not_one_is_found(made: Commands) -> None:
    page(
        made,
        "```sh\nkustomize build deploy/base | kubectl apply -f -\nkustomize biuld deploy/base\n"
        "curl -s localhost:8080/readyz\ncurl -s -H 'Host: x'\n```\n",
    )
    assert [s.where for s in made.kustomize()] == ["docs/page.md:3"]
    assert [s.where for s in made.curl()] == ["docs/page.md:5"]
