"""The runtime library's and the services' source files and modules, for tests that check a rule over
all of them (every error under the root, every reported reason known to the status rules)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_roots() -> list[Path]:
    """``libs/aimcore/src`` and each service's ``src``."""
    return [ROOT / "libs" / "aimcore" / "src", *sorted((ROOT / "services").glob("*/src"))]


def module_files() -> list[tuple[str, Path]]:
    """(module name, file) of every module of the runtime library and the services (``__main__``
    aside: importing it would start the service)."""
    found = []
    for src in source_roots():
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__main__":
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found.append((".".join(parts), path))
    return found
