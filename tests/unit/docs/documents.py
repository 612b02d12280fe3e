"""What the documentation checks read, and where each piece of it is: the README, every page under
``docs/``, the alert texts of the monitoring component (the summary and description an operator
paged at night reads) and the descriptions of the bus contract (``docs/asyncapi.yaml``, generated
from :mod:`aimcore.api.bus.contract`), split into prose with its code spans, and fenced code blocks
with their language. A code span may wrap across lines, as markdown allows; it is found in its paragraph and
placed at the line it starts on."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ALERT_RULES = Path("deploy/components/monitoring/prometheusrule.yaml")
ALERT_TEXTS = ("summary", "description")
ASYNCAPI = Path("docs/asyncapi.yaml")
FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)


@dataclass(frozen=True)
class Stale:
    """A name the docs give that the code does not have, and where."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def report(stale: list[Stale]) -> str:
    return "\n".join(map(str, stale))


@dataclass(frozen=True)
class Piece:
    """Text and where it is: ``file:line``, or ``file:alert`` for an alert's text."""

    where: str
    text: str


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language (``""`` when it names none) and its lines."""

    language: str
    lines: tuple[Piece, ...]


@dataclass(frozen=True)
class Page:
    """One document as prose (paragraphs of lines) and code blocks."""

    paragraphs: tuple[tuple[Piece, ...], ...]
    blocks: tuple[Block, ...]


def split(where: str, text: str) -> Page:
    """``text`` (markdown) as paragraphs outside code blocks and the code blocks; ``where`` names the
    file, to which each line's number is added."""
    paragraphs: list[tuple[Piece, ...]] = []
    blocks: list[Block] = []
    paragraph: list[Piece] = []
    block: list[Piece] | None = None
    language = ""
    for number, line in enumerate(text.splitlines(), 1):
        piece = Piece(f"{where}:{number}", line)
        fence = FENCE.match(line)
        if block is not None:
            if fence and not fence.group(2):
                blocks.append(Block(language, tuple(block)))
                block = None
            else:
                block.append(piece)
        elif fence:
            block, language = [], fence.group(2).lower()
        elif line.strip():
            paragraph.append(piece)
            continue
        if paragraph:
            paragraphs.append(tuple(paragraph))
            paragraph = []
    if paragraph:
        paragraphs.append(tuple(paragraph))
    return Page(tuple(paragraphs), tuple(blocks))


def find(pattern: re.Pattern[str], paragraph: tuple[Piece, ...]) -> Iterator[tuple[str, re.Match[str]]]:
    """Each match of ``pattern`` in a paragraph (its lines joined by newlines: a pattern that allows
    whitespace spans a wrapped line) and the line it starts on."""
    text = "\n".join(piece.text for piece in paragraph)
    for match in pattern.finditer(text):
        yield paragraph[text.count("\n", 0, match.start())].where, match


def spans(paragraph: tuple[Piece, ...]) -> Iterator[Piece]:
    """The code spans of a paragraph, each at the line it starts on, its whitespace made single
    spaces (a span wrapped across lines reads as one)."""
    for where, match in find(CODE_SPAN, paragraph):
        yield Piece(where, " ".join(match.group(2).split()))


class Documents:
    """The documentation of a checkout."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def pages(self) -> list[Path]:
        """The README and every page under ``docs/``."""
        readme = self.root / "README.md"
        return [*([readme] if readme.exists() else []), *sorted((self.root / "docs").rglob("*.md"))]

    def alert_texts(self) -> list[Piece]:
        """Each alert's summary and description, whole (YAML folds them over several lines)."""
        path = self.root / ALERT_RULES
        if not path.exists():
            return []
        spec = yaml.safe_load(path.read_text())["spec"]
        return [
            Piece(f"{ALERT_RULES}:{rule['alert']} {key}", " ".join(str(rule["annotations"][key]).split()))
            for group in spec["groups"]
            for rule in group["rules"]
            if "alert" in rule
            for key in ALERT_TEXTS
            if key in rule.get("annotations", {})
        ]

    def contract_texts(self) -> list[Piece]:
        """Every description of the bus contract, at its path in the document."""
        path = self.root / ASYNCAPI
        return list(_descriptions(yaml.safe_load(path.read_text()), str(ASYNCAPI))) if path.exists() else []

    def split_pages(self) -> Iterator[Page]:
        for path in self.pages():
            yield split(str(path.relative_to(self.root)), path.read_text())

    def prose(self) -> Iterator[Piece]:
        """Every line of prose in the pages, and every alert text."""
        for paragraph in self.paragraphs():
            yield from paragraph

    def paragraphs(self) -> Iterator[tuple[Piece, ...]]:
        """Every paragraph of prose in the pages, and every alert text and contract description (one
        line each)."""
        for page in self.split_pages():
            yield from page.paragraphs
        for text in (*self.alert_texts(), *self.contract_texts()):
            yield (text,)

    def find(self, pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
        """Each match of ``pattern`` in the prose (see :func:`find`), with its line."""
        for paragraph in self.paragraphs():
            yield from find(pattern, paragraph)

    def spans(self) -> Iterator[Piece]:
        """Every code span in the pages' prose and in the alert texts."""
        for paragraph in self.paragraphs():
            yield from spans(paragraph)

    def blocks(self) -> Iterator[Block]:
        """Every fenced code block of the pages."""
        for page in self.split_pages():
            yield from page.blocks

    def everything(self) -> Iterator[Piece]:
        """Every line: prose, code blocks and alert texts."""
        yield from self.prose()
        for block in self.blocks():
            yield from block.lines


def _descriptions(node: object, where: str) -> Iterator[Piece]:
    """The ``description`` strings anywhere in a YAML document, each at its path
    (``docs/asyncapi.yaml:channels.Decisions``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield Piece(where, " ".join(value.split()))
            else:
                yield from _descriptions(value, f"{where}{'.' if ':' in where else ':'}{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _descriptions(value, f"{where}[{index}]")
