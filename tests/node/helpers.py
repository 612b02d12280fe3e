"""Reading what the operator and the node did, for the node tier: conditions, the kubelet's and
controllers' Events (which outlive the Jobs the operator deletes once their output is read)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from aim_dev.node import config as node_config
from aimcore.api.behaviour import Behaviour
from aimcore.api.kinds import KindRef, by_kind
from aimcore.runtime import Kube
from tests.helpers import eventually

NODE_TIMEOUT = 900
"""Per test, its share of the session's stack included: the first test starts it (a few minutes on
a fresh machine, images imported into the node's containerd)."""
EVENT = KindRef("", "v1", "Event", "events", True)
AIM = "aim.eai.amd.com"


BEHAVIOUR = Behaviour(os.environ.get("AIM_TEST_BEHAVIOUR", Behaviour.SEEDS.value))
"""The operator's behaviour in this run (``AIM_TEST_BEHAVIOUR=released``: the released original's,
docs/node.md#tests): the stack deploys it, and the tests expect what it does."""
CACHE_ROOT = "/workspace/cache" if BEHAVIOUR.released else "/workspace/model-cache"
"""Where a predictor finds its cached model (``AIM_CACHE_PATH``)."""


def hub_env(hub_endpoint: str) -> list[dict[str, str]]:
    """Where the models are (the stack's Hub server), and that the runtime and the download Jobs
    may fetch from there (the outbound policy refuses the node's private address by default)."""
    return [
        {"name": "HF_ENDPOINT", "value": hub_endpoint},
        {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": node_config.NODE_IP},
    ]


def model_cache_kind() -> KindRef:
    """The model cache kind a template cache creates in this run (``AIMArtifact`` under released)."""
    return by_kind(AIM, "AIMArtifact" if BEHAVIOUR.released else "AIMModelCache")


def aim(kind: str) -> KindRef:
    return by_kind(AIM, kind)


def conditions(obj: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def summary(obj: Mapping[str, Any] | None) -> str:
    """A failure message's view of an object's status."""
    status = (obj or {}).get("status") or {}
    conds = [
        f"{c['type']}={c['status']}/{c.get('reason')}: {c.get('message', '')}"
        for c in status.get("conditions") or []
    ]
    return json.dumps({"status": status.get("status") or status.get("phase"), "conditions": conds}, indent=1)


async def wait_for(
    api: Kube,
    ref: KindRef,
    namespace: str | None,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    *,
    timeout: float,
    what: str,
) -> dict[str, Any]:
    """The object once ``check`` accepts it; on timeout the failure shows its last status."""
    seen: dict[str, Any] = {}

    async def probe() -> dict[str, Any] | None:
        obj = await api.get(ref, namespace, name)
        seen["obj"] = obj
        return obj if obj is not None and check(obj) else None

    try:
        return await eventually(probe, timeout=timeout, interval=0.25, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc.args[0].split('; last=')[0]}\n{summary(seen.get('obj'))}") from None


def state(obj: Mapping[str, Any]) -> str | None:
    status = obj.get("status") or {}
    return status.get("status") or status.get("phase")


async def events(api: Kube, namespace: str, **match: str) -> list[dict[str, Any]]:
    """The namespace's Events whose fields match (``reason``, ``kind``/``name`` of the object,
    ``component`` of the source)."""
    items, _ = await api.list(EVENT, namespace)
    out = []
    for e in items:
        involved = e.get("involvedObject") or {}
        fields = {
            "reason": e.get("reason"),
            "kind": involved.get("kind"),
            "name": involved.get("name"),
            "component": (e.get("source") or {}).get("component"),
        }
        if all(
            str(fields.get(k) or "").startswith(v) if k == "name" else fields.get(k) == v
            for k, v in match.items()
        ):
            out.append(e)
    return out


async def job_pods(api: Kube, namespace: str, job: str) -> list[str]:
    """The pods a Job created, from the Job controller's Events (they outlive Job and pods; a pod's
    name is the Job's, cut to fit, plus a suffix)."""
    created = await events(api, namespace, reason="SuccessfulCreate", kind="Job", name=job)
    return [e["message"].removeprefix("Created pod: ") for e in created if e["involvedObject"]["name"] == job]


async def ran_on_the_node(api: Kube, namespace: str, job: str, image: str | None = None) -> None:
    """The kubelet started the Job's pod (pulling ``image`` if given), the Job controller saw it
    complete: from their Events."""
    [pod] = await job_pods(api, namespace, job)
    kubelet = [
        e
        for e in await events(api, namespace, kind="Pod", component="kubelet")
        if e["involvedObject"]["name"] == pod
    ]
    reasons = {e["reason"] for e in kubelet}
    assert {"Created", "Started"} <= reasons, kubelet
    if image is not None:
        assert any(
            image in (e.get("message") or "") for e in kubelet if e["reason"] in ("Pulled", "Pulling")
        ), kubelet
    completed = await events(api, namespace, reason="Completed", kind="Job", name=job)
    assert [e for e in completed if e["involvedObject"]["name"] == job], f"no Completed event for Job {job}"
