"""The runtime's public face (:mod:`aimcore.runtime`): one list of names, each the object its module
defines, loaded on first use (so the watcher loads no CRD model), and the face is how services
reach the runtime."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

from aimcore import runtime
from tests.sources import ROOT

INIT = ROOT / "libs" / "aimcore" / "src" / "aimcore" / "runtime" / "__init__.py"

# What only the two platform services (the watcher, the status service) or a service's settings
# reach past the face for, by module: each is named in the face's docstring.
PAST_THE_FACE = {
    "aimcore.runtime.composer",  # the status service's composition; rfc3339 and has_status_field
    "aimcore.runtime.keyedlock",  # the status service's per-object lock
    "aimcore.runtime.kube",  # Gone: the watcher's relist on 410
    "aimcore.runtime.kvlease",  # the watcher's leader lease
    "aimcore.runtime.mirrorscan",  # the watcher's seed from the mirror
    "aimcore.runtime.natsinternals",  # the watcher's conditional mirror writes
    "aimcore.runtime.probes",  # the watcher's readiness while it leads
    "aimcore.runtime.resourceversion",  # the watcher's version order
    "aimcore.runtime.settings",
}


def face_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {
        alias.name: str(node.module)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_face_lists_each_name_it_imports_for_the_type_checker_once() -> None:
    imports = face_imports()
    assert sorted(runtime.__all__) == sorted(imports)
    assert len(runtime.__all__) == len(set(runtime.__all__))


def test_each_name_of_the_face_is_the_object_its_module_defines() -> None:
    for name, module in face_imports().items():
        assert getattr(runtime, name) is getattr(importlib.import_module(module), name), name


def test_a_name_not_in_the_face_is_an_attribute_error_and_submodules_still_import() -> None:
    try:
        runtime.nothing_of_the_kind  # noqa: B018
    except AttributeError as exc:
        assert "nothing_of_the_kind" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
    from aimcore.runtime import logs  # noqa: PLC0415 - a submodule, not a name of the face

    assert logs.__name__ == "aimcore.runtime.logs"


def test_the_face_costs_nothing_until_used_and_the_watcher_loads_no_crd_model() -> None:
    probe = (
        "import sys, aimcore.runtime;"
        "print(sorted(m for m in sys.modules if m.startswith('aimcore.runtime.')));"
        "import aim_watcher.app;"
        "print(sorted(m for m in sys.modules if m.startswith('aimcore.api.crds')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    before, crds = out.stdout.splitlines()
    assert (before, crds) == ("[]", "[]")


def test_services_reach_the_runtime_through_its_face() -> None:
    past: dict[str, list[str]] = {}
    for path in sorted((ROOT / "services").glob("*/src/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aimcore.runtime."):
                module = str(node.module)
                if module not in PAST_THE_FACE and not module.startswith("aimcore.runtime.settings."):
                    past.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert past == {}
