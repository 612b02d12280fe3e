"""The runtime library's layers hold what their names say: the runtime is generic over kinds (it
names no API group: what a kind derives from its conditions, or which field names its state, is
given to it by the domain's composer), and what is AIM's lives in the domain. The import contracts
in ``pyproject.toml`` check the imports; this checks what no import shows."""

from __future__ import annotations

import re

from tests.sources import ROOT

RUNTIME = ROOT / "libs" / "aimcore" / "src" / "aimcore" / "runtime"
GROUPS = re.compile(
    r"aim\.eai\.amd\.com|aim\.silogen\.ai|inference\.llmkube\.dev|\bGROUP_(AIM|LEGACY|LLMKUBE)\b"
)


def test_the_runtime_names_no_api_group() -> None:
    named = {
        str(path.relative_to(ROOT)): sorted({m.group(0) for m in GROUPS.finditer(path.read_text())})
        for path in sorted(RUNTIME.rglob("*.py"))
        if GROUPS.search(path.read_text())
    }
    assert named == {}
