"""The multi-node tier's shared stack: one control plane with three real nodes on one switch, each
with kubelet, containerd, kube-proxy and the cluster DNS stand-in, and the operator applied from
``deploy/overlays/local-cluster`` (the production overlay: NATS as three pods over TLS, two replicas
of each service, the PDBs) — what ``aimctl up --node --nodes 3`` runs
(:class:`aim_dev.local.nodestack.NodeStack` with ``node_count=3``).

Started once for the tier from the main thread (the nodes' daemons die with the thread that
started them, so a lost node is brought back from the main thread too) and stopped when the tier
ends, before the next tier starts its own. The tests share it in order (each file's faults leave
the cluster whole again: every node Ready, the bus formed)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from aim_dev import testmodel
from aim_dev.local.nodestack import CLUSTER_IMAGES, NodeStack
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect

MODEL_REPOSITORY = "aim/test-model"
NODES = 3


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[NodeStack]:
    if os.geteuid() != 0:
        pytest.skip("real nodes need root (namespaces, cgroups)")
    start = time.monotonic()
    cluster = NodeStack(
        home=tmp_path_factory.mktemp("multinode"),
        node_count=NODES,
        build=[*CLUSTER_IMAGES, "test-model"],
    )
    cluster.start()
    cluster.timings["stack start"] = round(time.monotonic() - start, 1)
    try:
        yield cluster
    finally:
        stop = time.monotonic()
        cluster.stop()
        cluster.timings["stack stop"] = round(time.monotonic() - stop, 1)
        request.config.stash[TIMINGS] = cluster.timings


TIMINGS = pytest.StashKey[dict[str, float]]()
FIGURES = pytest.StashKey[dict[str, Any]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The stack's timings and the faults' figures, at the end of the run's report."""
    for key, title in ((TIMINGS, "multi-node stack timings (s)"), (FIGURES, "multi-node fault figures")):
        found = config.stash.get(key, None)
        if found:
            terminalreporter.write_line(f"{title}: {json.dumps(found)}")


@pytest.fixture(scope="package")
def figures(request: pytest.FixtureRequest) -> dict[str, Any]:
    """What the fault tests measured, reported at the end of the run (the issue's figures)."""
    found: dict[str, Any] = {}
    request.config.stash[FIGURES] = found
    return found


@pytest.fixture(scope="package")
def model_image(stack: NodeStack) -> str:
    """The test model pushed to the stack's registry, as the nodes and the operator see it."""
    return stack.push_model("test-model", MODEL_REPOSITORY, testmodel.VERSION)


@pytest.fixture
async def api(stack: NodeStack) -> AsyncIterator[Kube]:
    client = Kube(await connect(str(stack.kubeconfig)), field_manager="aim-tests")
    try:
        yield client
    finally:
        await client.close()
