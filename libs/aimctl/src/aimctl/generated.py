"""One ``--check``-or-write flow for the pages aimctl generates from the code (settings, the RBAC
tables, the command reference, the bus topology table): each command names its page, how to tell
it is stale, how to write it, and what to say."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def check_or_write(
    page: Path,
    *,
    check: bool,
    stale: Callable[[Path], bool],
    write: Callable[[Path], None],
    differs: str,
    matches: str,
    wrote: str,
) -> int:
    """With ``check``: 1 and ``differs`` when ``page`` is stale, else 0 and ``matches``; without:
    write it and say ``wrote``. The messages are formats of ``page``."""
    if check:
        if stale(page):
            print(differs.format(page=page))
            return 1
        print(matches.format(page=page))
        return 0
    write(page)
    print(wrote.format(page=page))
    return 0
