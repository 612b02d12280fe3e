"""deploy/samples (:mod:`tests.unit.crds.test_sample_manifests`), each what the CRDs accept as written:
every sample is created on the real API server (not a dry run) and read back: every field written
is there with the value written (nothing pruned, nothing rewritten)."""

from __future__ import annotations

import secrets
from typing import Any

import yaml

from aimcore.api.kinds import by_kind
from aimcore.runtime import Kube
from tests.helpers import missing_or_changed
from tests.unit.crds.test_sample_manifests import MODELS, SAMPLE_DOCS


async def test_every_sample_is_created_and_reads_back_unpruned(kube: Kube, namespace: str) -> None:
    suffix = secrets.token_hex(3)
    created: list[tuple[Any, str | None, str]] = []
    problems: dict[str, list[str]] = {}
    try:
        for _, doc in SAMPLE_DOCS:
            ref = by_kind(doc["apiVersion"].split("/")[0], doc["kind"])
            body = yaml.safe_load(yaml.safe_dump(doc))  # a copy
            if ref.namespaced:
                body["metadata"]["namespace"] = namespace
            else:  # cluster-scoped: a name of this test's own (the session's cluster is shared)
                body["metadata"]["name"] = f"{body['metadata']['name']}-{suffix}"
            ns = body["metadata"].get("namespace")
            await kube.create(ref, body)
            created.append((ref, ns, body["metadata"]["name"]))
            read = await kube.get(ref, ns, body["metadata"]["name"])
            assert read is not None, body["metadata"]
            diff = missing_or_changed(body["spec"], read["spec"])
            if diff:
                problems[f"{doc['apiVersion']} {doc['kind']}"] = diff
        assert problems == {}
        assert len(created) == len(MODELS)
    finally:
        for ref, ns, name in created:
            if ns is None:
                await kube.delete(ref, None, name)
