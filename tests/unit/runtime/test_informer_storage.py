"""The informer keeps each object as its mirror bytes and only a bounded number parsed: reads of an
object no longer parsed answer it whole, by key, index, kind, namespace and label, and the guard
that never goes back in time holds for objects that are not parsed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aimcore.api.bus import subjects
from aimcore.api.kinds import GROUP_AIM, by_kind
from aimcore.api.types import Obj
from aimcore.runtime import Informer, field_indexer
from aimcore.runtime import informer as informer_module

TEMPLATE = by_kind(GROUP_AIM, "AIMServiceTemplate")
KEPT = 8


def template(name: str, model: str, rv: int, ns: str = "ns", **labels: str) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": str(rv)}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": TEMPLATE.api_version,
        "kind": TEMPLATE.kind,
        "metadata": meta,
        "spec": {"modelName": model},
    }


def key(name: str, ns: str = "ns") -> str:
    return subjects.object_key(TEMPLATE, ns, name)


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch) -> Informer:
    monkeypatch.setattr(informer_module, "PARSED_SIZE", KEPT)
    made = Informer(None, [TEMPLATE], {"model": field_indexer("spec", "modelName")})  # type: ignore[arg-type]
    for i in range(100):
        ns = "ns" if i % 2 else "other"
        made._store_raw(
            key(f"t-{i:03d}", ns),
            json.dumps(template(f"t-{i:03d}", f"m-{i % 5}", 10 + i, ns, tier=str(i % 3))).encode(),
        )
    return made


def test_only_a_bounded_number_of_objects_stay_parsed(cache: Informer) -> None:
    assert len(cache.objects) == 100
    assert len(cache._parsed) == KEPT
    for i in range(100):
        cache.get(TEMPLATE, "ns" if i % 2 else "other", f"t-{i:03d}")
    assert len(cache._parsed) == KEPT


def test_objects_not_parsed_are_read_whole(cache: Informer) -> None:
    first = cache.get(TEMPLATE, "other", "t-000")  # stored first: long out of the parsed cache
    assert first == template("t-000", "m-0", 10, "other", tier="0")
    assert {o["metadata"]["name"] for o in cache.by_index("model", "m-1")} == {
        f"t-{i:03d}" for i in range(1, 100, 5)
    }
    assert len(cache.list(TEMPLATE)) == 100
    in_ns = cache.list(TEMPLATE, "ns", labels={"tier": "1"})
    assert sorted(o["metadata"]["name"] for o in in_ns) == [
        f"t-{i:03d}" for i in range(100) if i % 2 and i % 3 == 1
    ]


def test_an_older_version_is_refused_though_the_newer_is_not_parsed(cache: Informer) -> None:
    assert "t-001" not in {k.rsplit(".", 1)[-1] for k in cache._parsed}
    cache._store_raw(key("t-001"), json.dumps(template("t-001", "stale", 5)).encode())
    got = cache.get(TEMPLATE, "ns", "t-001")
    assert got is not None and got["spec"]["modelName"] == "m-1"
    assert cache.by_index("model", "stale") == []


def test_a_removed_object_is_gone_and_remembered(cache: Informer) -> None:
    cache._remove(key("t-003"))
    assert cache.get(TEMPLATE, "ns", "t-003") is None
    assert key("t-003") not in cache.objects
    last = cache.last_known(TEMPLATE, "ns", "t-003")
    assert last is not None and last["metadata"]["resourceVersion"] == "13"
    assert all(o["metadata"]["name"] != "t-003" for o in cache.list(TEMPLATE, "ns"))
