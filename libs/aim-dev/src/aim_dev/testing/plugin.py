"""pytest plugin: real servers as processes for the test session.

- ``aim_servers`` (session): etcd + kube-apiserver + kube-controller-manager + nats-server on random
  loopback ports, every CRD of the three API groups plus stand-in CRDs for InferenceService,
  HTTPRoute and ScaledObject. Stopped at the end of the session, even when tests fail; a killed
  pytest takes them along (``PR_SET_PDEATHSIG``).
- ``kube`` / ``namespace`` (per test): an async client and a fresh namespace, deleted afterwards.
- ``kubelet`` (per test): a started :class:`~aim_dev.testing.kubelet.FakeKubelet` serving pod logs
  to the API server; its nodes (and the pods bound to them) are deleted afterwards.
- ``nats_client`` / ``js`` (per test): a NATS connection (as the bus's ``admin`` role) and its
  JetStream context. Every nats-server here runs with authorization on, as in production: connect
  with :func:`connect_as` (``connect_as(server, "deployer")`` to act as a service's role).
- ``nats_factory``: extra nats-servers a test may stop, kill and restart; ``private_js``: JetStream
  on one of them with the topology declared.
- ``oci_registry`` / ``oci_registry_auth`` (session): Debian's docker-registry, anonymous and with
  basic auth; push images with ``aim_dev.testing.oci.push_image``.
- ``hub_server`` (session): a Hugging-Face-Hub-compatible server; add repos with ``hub.add_repo(.root, ...)``.
- ``s3_server`` (session): moto_server enforcing IAM auth; ``.client()``, ``.put_model()``, ``.access_key``.

Servers start only when a test asks for them; unit tests pay nothing.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from aim_dev import crdinstall as crd_install
from aim_dev.crdgen import all_kinds, crd_for
from aim_dev.local.cluster import ControlPlane
from aim_dev.local.hub import HubServer
from aim_dev.local.natsserver import NatsServer
from aim_dev.local.registry import Registry
from aim_dev.local.s3 import S3Server
from aim_dev.standins import stand_in_crds
from aim_dev.testing.kubelet import FakeKubelet
from aimcore.api.bus import topology
from aimcore.api.kinds import KindRef
from aimcore.runtime import Kube, connect_bus
from aimcore.runtime.kube import connect

NAMESPACE = KindRef("", "v1", "Namespace", "namespaces", False)


@dataclass
class LocalServers:
    control_plane: ControlPlane
    nats: NatsServer
    workdir: Path

    @property
    def kubeconfig(self) -> str:
        return str(self.control_plane.kubeconfig_path)


def all_crds() -> list[dict[str, object]]:
    return [crd_for(k) for k in all_kinds()] + stand_in_crds()


async def install_all_crds(kubeconfig: str) -> None:
    kube = Kube(await connect(kubeconfig), field_manager="aim-tests")
    try:
        await crd_install.install(kube, all_crds())
    finally:
        await kube.close()


async def connect_as(
    server: NatsServer, role: str = "admin", *, forever: bool = False, **options: Any
) -> NatsClient:
    """A client of ``server`` with ``role``'s key (tests act as the admin unless they test a role)."""
    options.setdefault("connect_timeout", 5)
    return await connect_bus(server.client(role), f"test-{role}", forever=forever, **options)


def assert_no_violations(server: NatsServer) -> None:
    """Every service works within its bus role: the server logged no permission violation for a
    client named ``aim-…`` (tests that probe refusals connect as ``test-<role>``)."""
    found = server.violations()
    assert not found, "services needed subjects their bus roles lack:\n" + "\n".join(found[:20])


@pytest.fixture(scope="session")
def aim_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """A nats-server with JetStream for the whole session."""
    server = NatsServer(tmp_path_factory.mktemp("aim-nats"))
    try:
        yield server.start()
        assert_no_violations(server)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def aim_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager with every CRD installed."""
    cp = ControlPlane(tmp_path_factory.mktemp("aim-cluster"))
    try:
        cp.start()
        asyncio.run(install_all_crds(str(cp.kubeconfig_path)))
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def aim_servers(aim_cluster: ControlPlane, aim_nats: NatsServer) -> LocalServers:
    return LocalServers(aim_cluster, aim_nats, aim_cluster.workdir.parent)


@pytest.fixture
async def kube(aim_cluster: ControlPlane) -> AsyncIterator[Kube]:
    client = Kube(await connect(str(aim_cluster.kubeconfig_path)), field_manager="aim-tests")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def namespace(kube: Kube) -> AsyncIterator[str]:
    name = f"t-{secrets.token_hex(4)}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        await kube.delete(NAMESPACE, None, name)


@pytest.fixture
async def kubelet(kube: Kube) -> AsyncIterator[FakeKubelet]:
    """A fake kubelet (HTTPS ``/containerLogs`` on loopback); register nodes with
    ``await kubelet.register_node(kube, name)``. Its nodes and their pods are deleted afterwards."""
    fake = await FakeKubelet().start()
    try:
        yield fake
    finally:
        try:
            await fake.cleanup(kube)
        finally:
            await fake.stop()


@pytest.fixture
async def nats_client(aim_nats: NatsServer) -> AsyncIterator[NatsClient]:
    nc = await connect_as(aim_nats)
    try:
        yield nc
    finally:
        await nc.close()


@pytest.fixture
async def js(nats_client: NatsClient) -> JetStreamContext:
    return nats_client.jetstream()


@pytest.fixture
def nats_factory(tmp_path: Path) -> Iterator[Callable[[], NatsServer]]:
    """Start private nats-servers (for tests that stop or restart the server)."""
    started: list[NatsServer] = []

    def make() -> NatsServer:
        server = NatsServer(tmp_path / f"nats-{len(started)}").start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
    for server in started:
        assert_no_violations(server)
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.fixture
async def private_js(nats_factory: Callable[[], NatsServer]) -> AsyncIterator[JetStreamContext]:
    """JetStream on a nats-server of the test's own, with the system's topology declared."""
    nc = await connect_as(nats_factory())
    js = nc.jetstream()
    await topology.ensure_topology(js)
    try:
        yield js
    finally:
        await nc.close()


# ---------------------------------------------------------------------------------------------
# OCI registries (Debian's docker-registry as a process); push images with aim_dev.testing.oci
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """An anonymous registry on loopback (``.host`` for references, ``.url`` for HTTP)."""
    registry = Registry(tmp_path_factory.mktemp("oci-registry"))
    try:
        yield registry.start()
    finally:
        registry.stop()


@pytest.fixture(scope="session")
def oci_registry_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A registry with htpasswd basic auth; ``.username``/``.password`` (also ``.auth``) log in."""
    registry = Registry(
        tmp_path_factory.mktemp("oci-registry-auth"), username="aim-tests", password=secrets.token_urlsafe(16)
    )
    try:
        yield registry.start()
    finally:
        registry.stop()


# ---------------------------------------------------------------------------------------------
# Model sources: a Hugging-Face-Hub-compatible server and S3 (moto_server), each as a process
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    """A Hub server over a fresh root (``.root``; ``.endpoint`` for ``HfApi(endpoint=...)``).
    Faults and the request log are shared: tests clear what they arm."""
    workdir = tmp_path_factory.mktemp("hub-server")
    server = HubServer(workdir / "repos", workdir=workdir / "server")
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto_server with IAM auth on: sign with ``.access_key``/``.secret_key`` (``.client()`` does)."""
    server = S3Server(tmp_path_factory.mktemp("s3-server"), auth=True)
    try:
        yield server.start()
    finally:
        server.stop()
