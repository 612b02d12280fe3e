"""The documentation index, ``docs/README.md``, lists every page: each ``docs/*.md`` and the bus
contract ``docs/asyncapi.yaml`` is the target of a markdown link in it (outside code blocks, with or
without an ``#anchor``), so a reader who starts at the index finds every page, and a page added
without an entry fails here by name. The README at the top of the repository links to the index.

Whether each link's target and anchor exist is ``test_doc_references.py``'s job; this one only asks
that nothing under ``docs/`` is left out."""

from __future__ import annotations

import re
from pathlib import Path

from tests.sources import ROOT
from tests.unit.docs.test_doc_references import FENCE, MARKDOWN_LINK

INDEX = "README.md"
"""The index, in ``docs/``."""
LISTED_FILES = ("asyncapi.yaml",)
"""Pages under ``docs/`` that are not markdown but belong in the index."""


def linked(docs: Path) -> set[Path]:
    """The files the index links to, resolved (relative links outside code blocks, anchors and
    other schemes left out)."""
    found: set[Path] = set()
    fenced = False
    for line in (docs / INDEX).read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in MARKDOWN_LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = target.partition("#")[0]
            found.add((docs / path).resolve())
    return found


def pages(docs: Path) -> list[Path]:
    """The pages the index must list: every ``docs/*.md`` but itself, and :data:`LISTED_FILES`."""
    markdown = [page for page in sorted(docs.glob("*.md")) if page.name != INDEX]
    return markdown + [docs / name for name in LISTED_FILES if (docs / name).exists()]


def unlisted(docs: Path) -> list[str]:
    """The pages of :func:`pages` the index does not link to, by file name."""
    have = linked(docs)
    return [page.name for page in pages(docs) if page.resolve() not in have]


def test_the_index_lists_every_page() -> None:
    missing = unlisted(ROOT / "docs")
    assert not missing, f"docs/{INDEX} links to no entry for: {', '.join(missing)}"


def test_the_readme_links_the_index() -> None:
    assert "(docs/README.md)" in (ROOT / "README.md").read_text()


# -- the check itself, on a docs directory made for it ---------------------------------------------


def test_an_unlisted_page_is_found(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("listed.md", "anchored.md", "only-in-code.md", "forgotten.md", "asyncapi.yaml"):
        (docs / name).write_text("# A page\n")
    (docs / INDEX).write_text(
        "# Documentation\n\n"
        "- [listed](listed.md), [anchored](./anchored.md#a-page), [the bus](asyncapi.yaml)\n"
        "- [elsewhere](https://example.com/forgotten.md), [here](#documentation)\n\n"
        "```md\n[only in a code block](only-in-code.md)\n```\n"
    )
    assert unlisted(docs) == ["forgotten.md", "only-in-code.md"]
    (docs / INDEX).write_text((docs / INDEX).read_text() + "\n[now](forgotten.md), [too](only-in-code.md)\n")
    assert unlisted(docs) == []


def test_a_missing_bus_contract_is_not_asked_for(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# A page\n")
    (docs / INDEX).write_text("[page](page.md)\n")
    assert unlisted(docs) == []
