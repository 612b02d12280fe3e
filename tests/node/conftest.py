"""The node tier's shared stack: one control plane with a real node, the operator applied from
``deploy/overlays/local-node`` (NATS and the six services as Pods), the KServe stand-in, a local
registry and Hub server (:class:`aim_dev.local.nodestack.NodeStack`, what ``aimctl up --node``
runs). Started once per session from the main thread (the node's daemons die with the thread that
started them) and shared by the tests, each in a namespace of its own; the smoke tests in
``test_node_smoke.py`` start nodes of their own.

Nothing here plays the kubelet: every Pod and Job status is the real kubelet's and controllers'."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from aim_dev import llamacpp, testmodel
from aim_dev.local import deployed
from aim_dev.local.nodestack import NODE_IMAGES, NodeStack
from aim_dev.testing.kubelet import wait_for_service_account
from aimcore.api.kinds import NAMESPACE
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import kubectl
from tests.node.helpers import BEHAVIOUR, hub_env

MODEL_REPOSITORY = "aim/test-model"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[NodeStack]:
    if os.geteuid() != 0:
        pytest.skip("the real node needs root (namespaces, cgroups)")
    start = time.monotonic()
    node_stack = NodeStack(
        home=tmp_path_factory.mktemp("node-stack"), build=[*NODE_IMAGES, "test-model"], behaviour=BEHAVIOUR
    )
    node_stack.start()
    node_stack.timings["stack start"] = round(time.monotonic() - start, 1)
    try:
        yield node_stack
        # every service worked within its bus role on the deployed, authenticated NATS
        nats_log = kubectl(
            "logs",
            "-n",
            deployed.SYSTEM_NAMESPACE,
            "aim-nats-0",
            "-c",
            "nats",
            kubeconfig=node_stack.kubeconfig,
        )
        violations = [line for line in nats_log.splitlines() if "Violation" in line and ":aim-" in line]
        assert not violations, "services needed subjects their bus roles lack:\n" + "\n".join(violations[:20])
    finally:
        stop = time.monotonic()
        node_stack.stop()
        node_stack.timings["stack stop"] = round(time.monotonic() - stop, 1)
        request.config.stash[TIMINGS] = node_stack.timings


TIMINGS = pytest.StashKey[dict[str, float]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The shared stack's timings (seconds), at the end of the run's report."""
    timings = config.stash.get(TIMINGS, None)
    if timings:
        terminalreporter.write_line(f"node tier stack timings (s): {json.dumps(timings)}")


@pytest.fixture(scope="session")
def model_image(stack: NodeStack) -> str:
    """The test model pushed to the stack's registry, as the node and the operator see it."""
    return stack.push_model("test-model", MODEL_REPOSITORY, testmodel.VERSION)


@pytest.fixture(scope="session")
def runtime_image(stack: NodeStack) -> str:
    """The llama.cpp runtime as custom models' base image: from containerd's store under the seeds'
    behaviour (custom models are not inspected), from the stack's registry under the released one,
    whose operator inspects a custom model's image on its registry before anything runs it (and
    may not reach ``localhost``, containerd's name for images imported without a registry)."""
    if BEHAVIOUR.released:
        return stack.push_model("llamacpp", "aim/aim-llamacpp", llamacpp.VERSION)
    return llamacpp.IMAGE


@pytest.fixture(scope="session")
def source_env(stack: NodeStack) -> list[dict[str, str]]:
    """The env a service of the test model needs for its cache under the released behaviour (where
    every service caches: its download Job fetches ``hf://aim-test/tiny-model`` from the stack's
    Hub); nothing under the seeds', where these services have no cache."""
    assert stack.hub is not None
    return hub_env(stack.hub_endpoint) if BEHAVIOUR.released else []


@pytest.fixture
async def api(stack: NodeStack) -> AsyncIterator[Kube]:
    client = Kube(await connect(str(stack.kubeconfig)), field_manager="aim-tests")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def namespace(api: Kube) -> AsyncIterator[str]:
    """A namespace of the test's own, kept afterwards (its pods' logs help when a later test fails;
    the stack goes at the end of the session)."""
    name = f"t-{secrets.token_hex(4)}"
    await api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    await wait_for_service_account(api, name)
    yield name


@pytest.fixture
async def volumes(stack: NodeStack, api: Kube) -> AsyncIterator[Any]:
    """``await volumes(n, size)``: static hostPath PersistentVolumes (bound before the stack's
    provisioner would make one, so the test knows where the bytes land), each a
    fresh directory writable by the download Jobs' uid, bound by whichever claim fits first. The
    ones no claim took are deleted after the test, or a later test's claim could bind one of them
    instead of its own (a PV's name is its directory's)."""
    made: list[Path] = []

    async def make(count: int, size: str = "2Gi", **kwargs: Any) -> list[Path]:
        paths = await stack.add_volumes(api, count, size, **kwargs)
        made.extend(paths)
        return paths

    yield make
    for path in made:
        volume = await api.get(deployed.PERSISTENT_VOLUME, None, path.name)
        if volume is not None and (volume.get("status") or {}).get("phase") == "Available":
            await api.delete(deployed.PERSISTENT_VOLUME, None, path.name)
