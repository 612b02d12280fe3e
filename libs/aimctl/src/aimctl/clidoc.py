"""docs/cli.md, the ``aimctl`` command reference, generated from aimctl's own parser so the page
cannot drift from the commands: ``aimctl cli docs`` rewrites it, ``--check`` (and
tests/unit/cli/test_cli_docs.py) fails when it is stale. Each command's ``--help``, at a fixed
width, under a heading of its own, in the parser's order."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PAGE = Path("docs") / "cli.md"
WIDTH = "100"

HEADER = """# `aimctl` command reference

<!-- Generated from aimctl's parser by `aimctl cli docs`; do not edit by hand
(tests/unit/cli/test_cli_docs.py fails when it is stale). -->

Every command and option of `aimctl`, as `aimctl <command> --help` prints it. Install it with the
repository (`uv run aimctl`), or on its own with `uv tool install --from ./libs/aimctl aimctl`
([audit.md](audit.md#where-the-servers-are)). Where each is explained: [audit.md](audit.md)
(`events`, `describe`), [deploy.md](deploy.md) (`bus`, `images`, `rbac`), [caching.md](caching.md)
(`caches`), [node.md](node.md) (`up`, `down`), [settings.md](settings.md) (`settings`),
[benchmarks.md](benchmarks.md) (`bench`).
"""


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser`` by name (none for a leaf)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every command under ``parser`` (itself first) with its help text."""
    yield path, parser.format_help()
    for name, child in subcommands(parser).items():
        yield from commands(child, (*path, name))


@contextmanager
def _fixed_width() -> Iterator[None]:
    """argparse wraps at the terminal's width (``COLUMNS``): the page is the same everywhere."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def render(parser: argparse.ArgumentParser) -> str:
    sections = [HEADER]
    with _fixed_width():
        for path, text in commands(parser):
            title = " ".join(("aimctl", *path))
            sections.append(f"## `{title}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(sections)


def stale(parser: argparse.ArgumentParser, page: Path = PAGE) -> bool:
    return not page.exists() or page.read_text() != render(parser)


def write(parser: argparse.ArgumentParser, page: Path = PAGE) -> None:
    page.write_text(render(parser))
