"""Every reference to the project's documents resolves inside the repository: a reader who follows
``docs/design.md#leases`` from a code comment, or a link from one page to another, finds the page
and the heading it names. Checked here:

- anywhere in the code and the docs, a ``docs/<page>.md`` reference, with or without ``#anchor``:
  the page exists, and the anchor is one of its headings (GitHub's slug) or an explicit ``<a id>``;
- in the README and every page under ``docs/``, each relative markdown link: the file exists, and
  so does the anchor when it points into a page;
- in the same pages and in the alert rules (the texts an operator paged reads,
  ``deploy/components/monitoring/prometheusrule.yaml``), the source paths they name
  (``services/cache/src/aim_cache/plan.py``, ``aimcore/api/kinds.py``) and the modules
  (``aimcore.runtime.lease``, ``aim_status.ordering.Ordering``): the file, directory or module
  exists, and a name after the module is defined in it;
- nothing cites the original design contract, a file outside the repository (its sections are
  ``docs/design.md`` now);
- nothing cites the other documents kept outside the repository either: the write-ups of how the
  original operator behaves, by section number, file name or directory (their topics are
  ``docs/original.md`` now), and the specification's documents by number or by a quoted section
  or type name (their sections are ``docs/specification.md`` now);
- in the README and every page under ``docs/``, nothing names an issue by its number ("issue 25",
  "(issues 28 and 39)", "#12"): the project's tracker is not public, so no reader can follow one,
  and a page says in words what it refers to; another project's issue is named with its
  repository (``grpc/grpc-go#5358``), which a reader can look up.

Renaming a heading, a page or a module therefore means updating what cites it; this test lists
each stale reference with the file and line that holds it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sources import ROOT
from tests.unit.docs.documents import ALERT_RULES, Stale, report

SCANNED_SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".conf", ".cfg"}
SCANNED_NAMES = {"Dockerfile"}
SKIPPED_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}

# The original contract lived outside the repository; no reference to it can resolve.
ORIGINAL_CONTRACT = re.compile(r"DESIGN[ ]§|DESIGN[.]md")
# Nor can a citation of the other documents kept beside the checkout: a section number ("§1.4"),
# the directory itself, the write-ups by file name, a seed by number or by a quoted section or type.
OUTSIDE_CITATION = re.compile(
    r"(?:\breference\s+)?§\s*\d[\d.-]*"
    r"|(?:\.\./)?\bshared/(?:reference|seeds)\b|\.\./shared\b"
    r"|\b(?:aim-engine|released-original|real-node|real-inference|landscape|libraries-and-style)\.md\b"
    r"|\bseeds?\s+0\d\d\b|\bseeds?\s+``[^`]*``|\bseeds?(?:'s)?\s+\"[^\"]*\"",
    re.IGNORECASE,
)
# An issue named by number: "issue 25", "Issue 20's", "issues 28 and 39" ("issue 29, 2026-11-27" is
# issue 29 alone), or a bare "#12" (not another project's "owner/repo#12", nor an entity "&#35;").
# Link targets are left out before matching: an anchor such as "#2-install" is no issue.
ISSUE_NUMBER = re.compile(
    r"\bissues?\s+(?:no\.\s*|number\s+)?#?\d+\b(?:(?:\s*,\s*|\s+(?:and|or)\s+)#?\d+(?![\w/-]|\.\d))*"
    r"|(?<![\w/.#&-])#\d+\b",
    re.IGNORECASE,
)
ISSUE_ADVICE = "say in words what it refers to (another project's issue: owner/repo#N)"
DOC_REFERENCE = re.compile(r"(?<![\w/.-])docs/([\w./-]+?\.md)(?:#([\w-]+))?")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")
FENCE = re.compile(r"^\s*(```|~~~)")
ROOT_PATH = re.compile(r"(?<![\w/.$~-])((?:libs|services|tests|scripts|deploy|docs)/[\w./<>*{}-]*)")
KUBECTL_DEPLOYMENT = re.compile(r"^deploy/aim-[a-z-]+$")  # kubectl's `deploy/<name>`, not a path
PLACEHOLDER = re.compile(r"[<>*{}]")
# The docs checks' test modules (this one too): their own tests hold broken references on purpose.
EXAMPLES = frozenset(Path(__file__).resolve().parent.glob("test_*.py"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces as
    hyphens (so ``How costs grow — `aimctl bench scale``` is ``how-costs-grow--aimctl-bench-scale``)."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors a markdown page has: one per heading outside code blocks (a repeated heading
    gets ``-1``, ``-2``... as on GitHub), and every explicit ``<a id=...>``."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(EXPLICIT_ANCHOR.findall(line))
    return found


class Repository:
    """The files of a checkout and what they refer to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._anchors: dict[Path, set[str]] = {}
        self.packages = {
            package.name: package
            for package in sorted(root.glob("libs/*/src/*")) + sorted(root.glob("services/*/src/*"))
            if (package / "__init__.py").exists()
        }

    def scanned(self) -> Iterator[Path]:
        """The code and documents: every source, script, configuration and page."""
        for path in sorted(self.root.rglob("*")):
            parts = path.relative_to(self.root).parts
            if any(part in SKIPPED_DIRS for part in parts) or not path.is_file() or path in EXAMPLES:
                continue
            if path.suffix in SCANNED_SUFFIXES or path.name in SCANNED_NAMES:
                yield path

    def pages(self) -> list[Path]:
        """The README and every page under ``docs/``."""
        readme = self.root / "README.md"
        return [*([readme] if readme.exists() else []), *sorted((self.root / "docs").rglob("*.md"))]

    def documents(self) -> list[Path]:
        """The pages, and the alert rules whose texts name what to look at."""
        rules = self.root / ALERT_RULES
        return [*self.pages(), *([rules] if rules.exists() else [])]

    def lines(self, path: Path) -> Iterator[tuple[str, str]]:
        relative = path.relative_to(self.root)
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            yield f"{relative}:{number}", line

    # -- checks ---------------------------------------------------------------------------------

    def original_contract(self) -> list[Stale]:
        return self._citations(ORIGINAL_CONTRACT, "the original design contract", "docs/design.md")

    def outside_citations(self) -> list[Stale]:
        return self._citations(
            OUTSIDE_CITATION, "a document outside the repository", "docs/original.md or docs/specification.md"
        )

    def issue_numbers(self) -> list[Stale]:
        """Every issue the pages name by number, at the line it starts on (a reference may wrap
        across lines), link targets left out."""
        stale = []
        for page in self.pages():
            text = MARKDOWN_LINK.sub("]", page.read_text())  # a target holds no newline: lines stay
            for match in ISSUE_NUMBER.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                named = " ".join(match.group(0).split())
                stale.append(
                    Stale(
                        f"{page.relative_to(self.root)}:{line}",
                        f"names an issue by number ({named}): {ISSUE_ADVICE}",
                    )
                )
        return stale

    def _citations(self, pattern: re.Pattern[str], cited: str, instead: str) -> list[Stale]:
        """Every match of ``pattern`` in the code and the documents: a citation nothing resolves."""
        return [
            Stale(where, f"cites {cited} ({match.group(0)}): cite {instead}")
            for path in self.scanned()
            for where, line in self.lines(path)
            for match in pattern.finditer(line)
        ]

    def document_references(self) -> list[Stale]:
        stale = []
        for path in self.scanned():
            for where, line in self.lines(path):
                for match in DOC_REFERENCE.finditer(line):
                    problem = self._target(self.root / "docs" / match.group(1), match.group(2))
                    if problem:
                        stale.append(Stale(where, f"docs/{match.group(1)}: {problem}"))
        return stale

    def links(self) -> list[Stale]:
        stale = []
        for page in self.pages():
            for where, line in self.lines(page):
                for match in MARKDOWN_LINK.finditer(line):
                    target = match.group(1)
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                        continue
                    path, _, anchor = target.partition("#")
                    problem = self._target((page.parent / path) if path else page, anchor or None)
                    if problem:
                        stale.append(Stale(where, f"link ({target}): {problem}"))
        return stale

    def source_paths(self) -> list[Stale]:
        package_path = re.compile(
            r"(?<![\w/.$~-])((?:" + "|".join(map(re.escape, self.packages)) + r")/[\w./<>*{}-]*)"
        )
        stale = []
        for page in self.documents():
            for where, line in self.lines(page):
                for match in ROOT_PATH.finditer(line):
                    named = match.group(1).rstrip(".,")
                    if PLACEHOLDER.search(named) or KUBECTL_DEPLOYMENT.match(named):
                        continue
                    if not (self.root / named).exists():
                        stale.append(Stale(where, f"{named} does not exist"))
                for match in package_path.finditer(line):
                    named = match.group(1).rstrip(".,")
                    package, _, rest = named.partition("/")
                    if not PLACEHOLDER.search(named) and not (self.packages[package] / rest).exists():
                        stale.append(Stale(where, f"{named} does not exist (in {package})"))
        return stale

    def modules(self) -> list[Stale]:
        dotted = re.compile(
            r"(?<![\w.])((?:" + "|".join(map(re.escape, self.packages)) + r")(?:\.[A-Za-z_]\w*)+)"
        )
        stale = []
        for page in self.documents():
            for where, line in self.lines(page):
                for match in dotted.finditer(line):
                    problem = self._module(match.group(1))
                    if problem:
                        stale.append(Stale(where, f"{match.group(1)}: {problem}"))
        return stale

    # -- resolving ------------------------------------------------------------------------------

    def _target(self, path: Path, anchor: str | None) -> str | None:
        if not path.exists():
            return "no such file"
        if anchor and path.suffix == ".md":
            known = self._anchors.setdefault(path, anchors(path))
            if anchor not in known:
                return f"no heading #{anchor}"
        return None

    def _module(self, name: str) -> str | None:
        """Whether ``name`` is a module, or a name defined in the longest module it starts with."""
        package, *parts = name.split(".")
        location = self.packages[package]
        while parts and ((location / parts[0]).is_dir() or (location / f"{parts[0]}.py").exists()):
            location = location / parts[0] if (location / parts[0]).is_dir() else location / f"{parts[0]}.py"
            parts.pop(0)
        if not parts:
            return None
        source = location / "__init__.py" if location.is_dir() else location
        if not re.search(rf"\b{re.escape(parts[0])}\b", source.read_text()):
            return f"no module or name {parts[0]!r} in {source.relative_to(self.root)}"
        return None


REPOSITORY = Repository(ROOT)


def test_nothing_cites_the_original_design_contract() -> None:
    stale = REPOSITORY.original_contract()
    assert not stale, report(stale)


def test_nothing_cites_a_document_outside_the_repository() -> None:
    stale = REPOSITORY.outside_citations()
    assert not stale, report(stale)


def test_no_page_names_an_issue_by_number() -> None:
    stale = REPOSITORY.issue_numbers()
    assert not stale, report(stale)


def test_every_reference_to_a_document_resolves() -> None:
    stale = REPOSITORY.document_references()
    assert not stale, report(stale)


def test_every_link_in_the_docs_resolves() -> None:
    stale = REPOSITORY.links()
    assert not stale, report(stale)


def test_every_source_path_the_docs_name_exists() -> None:
    stale = REPOSITORY.source_paths()
    assert not stale, report(stale)


def test_every_module_the_docs_name_exists() -> None:
    stale = REPOSITORY.modules()
    assert not stale, report(stale)


def test_the_readme_lists_the_design() -> None:
    assert "(docs/design.md)" in (ROOT / "README.md").read_text()


# -- the checker itself, on a repository made for it ---------------------------------------------


@pytest.fixture
def made(tmp_path: Path) -> Repository:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text(
        "# Design\n\n## Leases\n\n## How costs grow — `aimctl bench scale`\n\n```sh\n# not a heading\n```\n"
        '## Leases\n\n<a id="kept"></a>\n'
    )
    package = tmp_path / "libs" / "lib" / "src" / "aimlib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "lease.py").write_text("class Lease:\n    pass\n")
    return Repository(tmp_path)


def test_the_anchors_are_githubs(made: Repository) -> None:
    assert anchors(made.root / "docs" / "design.md") == {
        "design",
        "leases",
        "how-costs-grow--aimctl-bench-scale",
        "leases-1",
        "kept",
    }


def test_a_reference_to_a_missing_heading_or_page_is_found(made: Repository) -> None:
    (made.root / "code.py").write_text(
        '"""One at a time (docs/design.md#leases), ordered (docs/design.md#ordering)."""\n'
        "# see docs/gone.md and docs/design.md#kept\n"
    )
    assert [str(s) for s in made.document_references()] == [
        "code.py:1: docs/design.md: no heading #ordering",
        "code.py:2: docs/gone.md: no such file",
    ]


def test_a_broken_link_is_found(made: Repository) -> None:
    (made.root / "README.md").write_text(
        "[design](docs/design.md#leases), [gone](docs/gone.md), [anchor](docs/design.md#nope), "
        "[here](#top), [web](https://example.com/x.md#y)\n\n# Top\n"
    )
    assert [str(s) for s in made.links()] == [
        "README.md:1: link (docs/gone.md): no such file",
        "README.md:1: link (docs/design.md#nope): no heading #nope",
    ]


def test_a_stale_source_path_or_module_is_found(made: Repository) -> None:
    (made.root / "docs" / "page.md").write_text(
        "`libs/lib/src/aimlib/lease.py`, `libs/lib/src/aimlib/gone.py`, `aimlib/lease.py`, "
        "`aimlib/gone.py`, `services/<name>/app.py`, `kubectl scale deploy/aim-x`.\n"
        "`aimlib.lease`, `aimlib.lease.Lease`, `aimlib.lease.Gone`, `aimlib.gone`, aim_metric_total.\n"
    )
    assert [str(s) for s in made.source_paths()] == [
        "docs/page.md:1: libs/lib/src/aimlib/gone.py does not exist",
        "docs/page.md:1: aimlib/gone.py does not exist (in aimlib)",
    ]
    assert [str(s) for s in made.modules()] == [
        "docs/page.md:2: aimlib.lease.Gone: no module or name 'Gone' in libs/lib/src/aimlib/lease.py",
        "docs/page.md:2: aimlib.gone: no module or name 'gone' in libs/lib/src/aimlib/__init__.py",
    ]


def test_a_stale_path_or_module_in_an_alert_text_is_found(made: Repository) -> None:
    rules = made.root / ALERT_RULES
    rules.parent.mkdir(parents=True)
    rules.write_text(
        "        - alert: AIMNoWatcherLeader\n          annotations:\n            description: >-\n"
        "              See libs/lib/src/aimlib/lease.py and aimlib.lease.Lease, not\n"
        "              libs/lib/src/aimlib/election.py nor aimlib.lease.Election.\n"
    )
    assert [str(s) for s in made.source_paths()] == [
        f"{ALERT_RULES}:5: libs/lib/src/aimlib/election.py does not exist",
    ]
    assert [str(s) for s in made.modules()] == [
        f"{ALERT_RULES}:5: aimlib.lease.Election: no module or name 'Election' in "
        "libs/lib/src/aimlib/lease.py",
    ]


def test_a_citation_of_the_original_contract_is_found(made: Repository) -> None:
    (made.root / "notes.md").write_text("As " + "DESIGN" + " §2.5 says; see ../shared/" + "DESIGN" + ".md\n")
    assert [s.where for s in made.original_contract()] == ["notes.md:1", "notes.md:1"]


def test_a_citation_outside_the_repository_is_found(made: Repository) -> None:
    # Spelled in pieces ({s} is the section sign), so that searching the repository for such
    # citations finds none here.
    pieces = {"s": "\u00a7", "shared": "shared", "seeds": "seeds", "seed": "seed", "node": "real-node"}
    (made.root / "code.py").write_text(
        (
            '"""Names follow the original (reference {s}1.4), labels {s}1.5, checks ({s}2.1-2.13)."""\n'
            "# as in ../{shared}/{seeds}/README.md and {shared}/reference/{node}.md\n"
            '# {seed} 003 "Model Lookup", {seed} ``ModelSourceFilter``, the {seed}\'s "Custom Models"\n'
            "# (Seeds 002 and 003); see landscape.md\n"
            "# an NKey seed file, the seed's ``^(hf|s3)://`` pattern, docs/original.md#derived-names\n"
        ).format(**pieces)
    )
    cited = [(s.where, s.what.partition("(")[2].partition("): ")[0]) for s in made.outside_citations()]
    assert cited == [
        (where, text.format(**pieces))
        for where, text in [
            ("code.py:1", "reference {s}1.4"),
            ("code.py:1", "{s}1.5"),
            ("code.py:1", "{s}2.1-2.13"),
            ("code.py:2", "../{shared}/{seeds}"),
            ("code.py:2", "{shared}/reference"),
            ("code.py:2", "{node}.md"),
            ("code.py:3", "{seed} 003"),
            ("code.py:3", "{seed} ``ModelSourceFilter``"),
            ("code.py:3", '{seed}\'s "Custom Models"'),
            ("code.py:4", "Seeds 002"),
            ("code.py:4", "landscape.md"),
        ]
    ]


def test_an_issue_named_by_number_is_found(made: Repository) -> None:
    (made.root / "README.md").write_text(
        "## The backbone (issue 3)\n\nAs Issue 20's budgets said, written the original's way (issues 28\n"
        "and 39), which #12 broke; see issue\nno. 7 and issues 4, 5 or #6; measured (issue 29, 2026-11-27).\n"
    )
    (made.root / "docs" / "page.md").write_text(
        "Fixed upstream (grpc/grpc-go#5358, defilantech/LLMKube#405); [step two](#2-install),\n"
        "[there](design.md#3-leases), &#35;, `#!/bin/sh`, colour #1f2 and #fff; the issue of order.\n"
        "Nothing at issue here; 3 issues; the issues: none. But see LLMKube #405.\n"
    )
    assert [str(s) for s in made.issue_numbers()] == [
        f"{where}: names an issue by number ({named}): {ISSUE_ADVICE}"
        for where, named in [
            ("README.md:1", "issue 3"),
            ("README.md:3", "Issue 20"),
            ("README.md:3", "issues 28 and 39"),
            ("README.md:4", "#12"),
            ("README.md:4", "issue no. 7"),
            ("README.md:5", "issues 4, 5 or #6"),
            ("README.md:5", "issue 29"),
            ("docs/page.md:3", "#405"),
        ]
    ]


def test_a_reference_to_a_missing_topic_of_the_original_is_found(made: Repository) -> None:
    (made.root / "docs" / "original.md").write_text("# How the original behaves\n\n## Derived names\n")
    (made.root / "code.py").write_text("# docs/original.md#derived-names, docs/original.md#derived-name\n")
    assert [str(s) for s in made.document_references()] == [
        "code.py:1: docs/original.md: no heading #derived-name",
    ]
