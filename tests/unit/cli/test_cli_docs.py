"""docs/cli.md is aimctl's command tree as its parser has it: generated, and stale the moment a
command or an option changes."""

from __future__ import annotations

from pathlib import Path

from aimctl import clidoc
from aimctl.main import parser

REPO = Path(__file__).resolve().parents[3]


def test_the_committed_page_matches_the_commands() -> None:
    assert not clidoc.stale(parser(), REPO / clidoc.PAGE), "run `aimctl cli docs`"


def test_every_command_has_its_section_and_every_option_its_line() -> None:
    page = (REPO / clidoc.PAGE).read_text()
    for path, text in clidoc.commands(parser()):
        assert f"## `{' '.join(('aimctl', *path))}`" in page
        assert text.splitlines()[0].split()[1] == "aimctl"  # usage: aimctl ...
    assert "--pull-from" in page and "aimctl images build" in page


def test_a_new_option_makes_the_page_stale(tmp_path: Path) -> None:
    page = tmp_path / "cli.md"
    p = parser()
    clidoc.write(p, page)
    assert not clidoc.stale(p, page)
    p.add_argument("--a-new-option", help="added after the page was written")
    assert clidoc.stale(p, page)
