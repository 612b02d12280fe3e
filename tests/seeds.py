"""The seed documents' YAML examples, for tests that prove every example is served."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
EXAMPLE_SEEDS = ("002_d178c89024ccde94.txt", "003_18a2f2e5ef91ea32.txt")

_YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


def documents() -> list[tuple[str, dict[str, Any]]]:
    """(seed file, document) for every YAML document in the seeds' ```yaml blocks."""
    docs: list[tuple[str, dict[str, Any]]] = []
    for name in EXAMPLE_SEEDS:
        for block in _YAML_BLOCK.findall((SEEDS / name).read_text()):
            for doc in yaml.safe_load_all(block):
                if doc is not None:
                    assert isinstance(doc, dict), f"{name}: unexpected YAML document {doc!r}"
                    docs.append((name, doc))
    return docs


def whole_objects(api_version: str | None = None) -> list[dict[str, Any]]:
    """Documents that are complete objects (apiVersion and kind), optionally of one API version."""
    return [
        d
        for _, d in documents()
        if "apiVersion" in d and "kind" in d and (api_version is None or d["apiVersion"] == api_version)
    ]


def fragments() -> list[dict[str, Any]]:
    return [d for _, d in documents() if "apiVersion" not in d]
