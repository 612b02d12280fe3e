"""The operator deployed onto the real local node the way users deploy it (docs/deploy.md, docs/node.md):
``kustomize build deploy/crds | kubectl apply -f -``, then the same of ``deploy/overlays/local-node``,
after the steps docs/deploy.md asks of a user.

What a user does, done here with the same objects:

- the bus credentials (``aimctl bus credentials``): one NKey per bus role, kept as seed files in
  ``<home>/nats/creds`` (where ``aimctl events`` finds the reader's) and created as the Secrets
  ``aim-bus-<role>`` deploy/ mounts;
- NATS's volume: a static hostPath volume reserved for the StatefulSet's claim
  (:func:`host_path_volume`), so its data stays where ``aimctl`` looks for it;
- the overlay applied with kubectl (``--validate=false``: kubectl 1.20 does not know the CRDs' CEL
  rules), then ready means ready: NATS and every Deployment rolled out, and every service bound to
  its durable consumer on the bus.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aim_dev import images, pinned
from aim_dev.local import binaries, consuming
from aim_dev.local.consuming import SERVICES
from aimcore.api.behaviour import Behaviour
from aimcore.api.bus import auth, topology
from aimcore.api.bus.secrets import ROLE_LABEL, SEED
from aimcore.api.kinds import DEPLOYMENT, NAMESPACE, POD, SECRET, KindRef
from aimcore.runtime import Kube
from aimcore.runtime.bus import BusSettings

TLS_SECRET = "aim-bus-tls"
STREAMS = (topology.EVENTS_STREAM, topology.STATUS_STREAM, topology.DECISIONS_STREAM)
BUCKETS = (
    topology.OBJECTS_BUCKET,
    topology.LEASES_BUCKET,
    topology.ELECTION_BUCKET,
    topology.DISCOVERY_BUCKET,
    topology.WATCHER_BUCKET,
)

SYSTEM_NAMESPACE = "aim-system"
OVERLAY = Path("deploy") / "overlays" / "local-node"
OVERLAY_RELEASED = Path("deploy") / "overlays" / "local-node-released"
"""The same with the released original's behaviour (``AIM_BEHAVIOUR=released`` on every service)."""
OVERLAY_CLUSTER = Path("deploy") / "overlays" / "local-cluster"
"""The production overlay on several nodes (a clustered bus over TLS, two replicas of everything)."""
NATS_SERVICE_IP = "10.0.0.250"
"""``aim-nats``'s fixed cluster address in ``local-cluster`` (each node publishes it to the host)."""
NATS_MONITOR_PORT = 8222
CRDS = Path("deploy") / "crds"
NATS_PORT = 4222
"""NATS's client port on the node (host networking: its loopback and its address)."""
NATS_CLAIM = "data-aim-nats-0"
NATS_UID = 1000  # deploy/base/nats.yaml runs NATS as 1000:1000

PERSISTENT_VOLUME = KindRef("", "v1", "PersistentVolume", "persistentvolumes", False)
STATEFUL_SET = KindRef("apps", "v1", "StatefulSet", "statefulsets", True)


class DeployFailed(RuntimeError):
    pass


def overlay_path(behaviour: Behaviour = Behaviour.SEEDS, clustered: bool = False) -> Path:
    if clustered:
        return images.repo_root() / OVERLAY_CLUSTER
    return images.repo_root() / (OVERLAY_RELEASED if behaviour is Behaviour.RELEASED else OVERLAY)


def crds_path() -> Path:
    return images.repo_root() / CRDS


def host_path_volume(
    name: str,
    path: Path,
    capacity: str,
    *,
    access_modes: Iterable[str] = ("ReadWriteOnce", "ReadWriteMany"),
    claim: tuple[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    storage_class: str = "",
) -> dict[str, Any]:
    """A static PersistentVolume on a directory of this machine of ``storage_class`` (none: it
    binds claims that name none; the default class's name: claims that name none get it);
    ``claim`` (namespace, name) reserves it for one claim."""
    spec: dict[str, Any] = {
        "capacity": {"storage": capacity},
        "accessModes": list(access_modes),
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
        "hostPath": {"path": str(path), "type": "Directory"},
    }
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "aim-local", **(labels or {})}},
        "spec": spec,
    }


def bus_client(url: str, credentials: Path, role: str, tls_ca: Path | None = None) -> BusSettings:
    """How a client of ``role`` on this machine connects to the deployed NATS (forwarded to ``url``;
    over TLS trusting ``tls_ca`` if given)."""
    return BusSettings(
        url=url,
        role=role,
        seed_file=str(auth.Credentials(credentials).seed_file(role)),
        seed=None,
        tls_ca_file=str(tls_ca) if tls_ca else None,
        tls_cert_file=None,
        tls_key_file=None,
    )


def rollout_problems(workloads: Iterable[Mapping[str, Any]]) -> list[str]:
    """What keeps Deployments and StatefulSets from being rolled out (empty: all are)."""
    problems = []
    for w in workloads:
        meta, spec, status = w["metadata"], w.get("spec") or {}, w.get("status") or {}
        want = int(spec.get("replicas", 1))
        name = f"{w['kind']} {meta['name']}"
        if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
            problems.append(f"{name}: not observed yet")
            continue
        ready = int(status.get("readyReplicas") or 0)
        updated = int(status.get("updatedReplicas") or 0)
        if w["kind"] == "Deployment":
            available = int(status.get("availableReplicas") or 0)
            total = int(status.get("replicas") or 0)
            if not (updated == available == ready == want == total):
                problems.append(f"{name}: {ready}/{want} ready, {updated} updated, {total} in all")
        elif ready < want or updated < want:
            problems.append(f"{name}: {ready}/{want} ready, {updated} updated")
    return problems


def bus_cluster_view(jsz: Mapping[str, Any], replicas: int = 3) -> tuple[list[str], dict[str, str]]:
    """One server's view of a clustered bus, from its ``/jsz?accounts=true&streams=true&config=true``:
    the problems it shows (no meta leader; a stream or KV bucket of the topology missing, not at
    ``replicas``, or without a leader), and the streams it leads, each with what keeps its other
    replicas from being current (empty: all are). Only a stream's leader knows whether its
    followers are current (another server lists itself out and the rest as of its last contact),
    so the caller asks until it has heard each stream's leader: :func:`bus_cluster_problems`."""
    problems = []
    if not (jsz.get("meta_cluster") or {}).get("leader"):
        problems.append("no JetStream meta leader")
    found = {
        d["name"]: d
        for account in jsz.get("account_details") or []
        for d in account.get("stream_detail") or []
    }
    led: dict[str, str] = {}
    for name in [*STREAMS, *(f"KV_{b}" for b in BUCKETS)]:
        detail = found.get(name)
        if detail is None:
            problems.append(f"{name}: not declared")
            continue
        have = int((detail.get("config") or {}).get("num_replicas") or 1)
        cluster = detail.get("cluster") or {}
        leader = cluster.get("leader")
        others = cluster.get("replicas") or []
        if have != replicas or not leader:
            problems.append(f"{name}: R{have}, leader {leader or 'none'}")
        elif leader not in {r.get("name") for r in others}:  # the answer is the leader's own
            behind = sorted(str(r.get("name")) for r in others if not r.get("current"))
            missing = replicas - 1 - len(others)
            led[name] = ", ".join(
                [*(f"{n} behind" for n in behind), *([f"{missing} missing"] if missing else [])]
            )
    return problems, led


def bus_cluster_problems(views: Sequence[Mapping[str, Any]], replicas: int = 3) -> list[str]:
    """What keeps the bus from being formed, from the latest answers of several servers (empty:
    formed): the newest answer's problems, and each stream whose leader has not been heard with
    every follower current."""
    if not views:
        return ["no server answered"]
    problems, _ = bus_cluster_view(views[-1], replicas)
    heard: dict[str, str] = {}
    for view in views:
        heard.update(bus_cluster_view(view, replicas)[1])
    for name in [*STREAMS, *(f"KV_{b}" for b in BUCKETS)]:
        if heard.get(name, "not heard from its leader"):
            problems.append(f"{name}: {heard.get(name, 'not heard from its leader')}")
    return problems


def _pod_summary(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    states = []
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        (what, detail), *_ = state.items() or [("unknown", {})]
        reason = (detail or {}).get("reason") or ""
        states.append(
            f"{cs.get('name')}={what}{'/' + reason if reason else ''} restarts={cs.get('restartCount', 0)}"
        )
    return f"{pod['metadata']['name']} {status.get('phase')} {' '.join(states)}"


def read_jsz(monitor: str) -> dict[str, Any]:
    """One NATS server's JetStream view (``/jsz`` with accounts, streams and their configuration)
    from its monitoring port at ``monitor`` (``host:port``), as :func:`bus_cluster_view` reads it."""
    url = f"http://{monitor}/jsz?accounts=true&streams=true&config=true"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return dict(json.loads(resp.read()))


class Deployment:
    """The operator on a node: :meth:`deploy` applies it, :meth:`wait_ready` waits for it."""

    def __init__(
        self,
        home: Path,
        kubeconfig: Path,
        *,
        nats_url: str,
        namespace: str = SYSTEM_NAMESPACE,
        behaviour: Behaviour = Behaviour.SEEDS,
        storage_class: str = "",
        registry: str,
        pull_from: str,
        clustered: bool = False,
    ):
        self.clustered = clustered
        """``local-cluster`` (three NATS servers over TLS, claims from the default class) in place
        of ``local-node``."""
        self.home = home
        self.registry = registry
        self.pull_from = pull_from
        self.storage_class = storage_class
        self.kubeconfig = kubeconfig
        self.nats_url = nats_url
        self.namespace = namespace
        self.behaviour = behaviour

    @property
    def credentials(self) -> Path:
        return self.home / "nats" / "creds"

    @property
    def nats_volume(self) -> Path:
        return self.home / "volumes" / "nats-data"

    @property
    def tls_ca(self) -> Path:
        """The bus CA's certificate, as a user copies it out of the Secret ``aim-bus-tls``."""
        return self.home / "nats" / "ca.crt"

    def bus(self, role: str = "reader") -> BusSettings:
        return bus_client(self.nats_url, self.credentials, role, self.tls_ca if self.clustered else None)

    @property
    def overlay(self) -> Path:
        """The overlay ``aimctl images build --push`` writes: the local node's, images by digest."""
        return self.home / "install"

    async def deploy(self, kube: Kube) -> None:
        """As docs/deploy.md has a user install it (one push, one apply), with what this machine adds
        first: NATS's volume (a static hostPath volume reserved for its claim). Then the images
        pushed to the stack's registry and pinned by digest in an overlay of the local node's
        (``aimctl images build --push``), the CRDs, and that overlay applied: no Secret step, the
        Job ``aim-bus-credentials`` makes the bus Secrets. Idempotent.

        Clustered, NATS's claims get volumes from the default class, and the bus's TLS Secrets are
        made first as docs/deploy.md has a user make them (``aimctl bus credentials --tls``, with
        the host's loopback among the certificate's names: the host reaches NATS through the
        nodes' forwarders)."""
        if self.clustered:
            await self._bus_tls(kube)
        else:
            await self._nats_volume(kube)
        pushed = await asyncio.to_thread(
            pinned.push, images.Builder(), self.registry, pull_from=self.pull_from, insecure=True
        )
        pinned.write_overlay(overlay_path(self.behaviour, self.clustered), self.overlay, pushed)
        # The CRDs and the user roles first, as their own kustomization (docs/deploy.md).
        crds = await asyncio.to_thread(
            binaries.apply_kustomization, crds_path(), "--validate=false", kubeconfig=self.kubeconfig
        )
        if crds.returncode != 0:
            raise DeployFailed(f"kustomize build {CRDS} | kubectl apply: {crds.stderr.strip()}")
        done = await asyncio.to_thread(
            binaries.apply_kustomization,
            self.overlay,
            "--validate=false",
            kubeconfig=self.kubeconfig,
            timeout=180,
        )
        if done.returncode != 0:
            said = done.stderr.strip() or done.stdout.strip()
            raise DeployFailed(f"kustomize build {self.overlay} | kubectl apply: {said}")

    async def _bus_tls(self, kube: Kube) -> None:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        await kube.create_if_absent(NAMESPACE, namespace)
        found, _ = await kube.list(SECRET, self.namespace)
        if not any(s["metadata"]["name"] == TLS_SECRET for s in found):
            made = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "aimctl", "bus", "credentials", "--tls", "--tls-host", "127.0.0.1"],
                capture_output=True,
                text=True,
                check=False,
            )
            if made.returncode != 0:
                raise DeployFailed(f"aimctl bus credentials --tls: {made.stderr.strip()}")
            applied = await asyncio.to_thread(
                binaries.run_kubectl, "apply", "-f", "-", kubeconfig=self.kubeconfig, stdin=made.stdout
            )
            if applied.returncode != 0:
                raise DeployFailed(f"kubectl apply (the bus credentials): {applied.stderr.strip()}")
            found, _ = await kube.list(SECRET, self.namespace)
        secret = next(s for s in found if s["metadata"]["name"] == TLS_SECRET)
        self.tls_ca.parent.mkdir(parents=True, exist_ok=True)
        self.tls_ca.write_bytes(base64.b64decode(secret["data"]["ca.crt"]))

    async def _nats_volume(self, kube: Kube) -> None:
        """NATS's volume: a static hostPath volume reserved for the StatefulSet's (one) claim."""
        self.nats_volume.mkdir(parents=True, exist_ok=True)
        os.chown(self.nats_volume, NATS_UID, NATS_UID)
        volume = host_path_volume(
            "aim-local-nats-data",
            self.nats_volume,
            "10Gi",
            access_modes=("ReadWriteOnce",),
            claim=(self.namespace, NATS_CLAIM),
            storage_class=self.storage_class,
        )
        await kube.create_if_absent(PERSISTENT_VOLUME, volume)

    async def keep_seeds(self, kube: Kube) -> None:
        """The bus Secrets the Job made, kept as seed files where local clients (``aimctl events``,
        the readiness check below) find them, as a user would copy the reader's out of the cluster."""
        found, _ = await kube.list(SECRET, self.namespace, label_selector=ROLE_LABEL)
        creds = auth.Credentials(self.credentials)
        for secret in found:
            role = secret["metadata"]["labels"][ROLE_LABEL]
            creds.keep(role, base64.b64decode(secret["data"][SEED]).decode())

    async def wait_ready(
        self, kube: Kube, timeout: float = 600.0, monitors: Sequence[str] = ()
    ) -> dict[str, float]:
        """Until NATS and every service are rolled out, the clustered bus formed (asked through
        ``monitors``, if any: :meth:`wait_bus_cluster`), and every service consumes from the bus;
        the seconds each took (from the call)."""
        start = time.monotonic()
        timings: dict[str, float] = {}
        deadline = start + timeout
        problems: list[str] = ["nothing observed yet"]
        while time.monotonic() < deadline:
            workloads = [
                *(await kube.list(STATEFUL_SET, self.namespace))[0],
                *(await kube.list(DEPLOYMENT, self.namespace))[0],
            ]
            problems = rollout_problems(workloads)
            for w in workloads:
                if not rollout_problems([w]):
                    timings.setdefault(w["metadata"]["name"], round(time.monotonic() - start, 1))
            if not problems and len(workloads) == len(SERVICES) + 1:
                break
            await asyncio.sleep(1)
        else:
            pods, _ = await kube.list(POD, self.namespace)
            detail = "\n".join(_pod_summary(p) for p in pods)
            raise DeployFailed(f"the operator did not roll out in {timeout:.0f}s: {problems}\n{detail}")
        await self.keep_seeds(kube)
        if monitors:
            await self.wait_bus_cluster(monitors, deadline)
            timings["bus cluster"] = round(time.monotonic() - start, 1)
        await self.wait_consuming(deadline)
        timings["consuming"] = round(time.monotonic() - start, 1)
        return timings

    async def wait_bus_cluster(self, monitors: Sequence[str], deadline: float) -> None:
        """The clustered bus formed (:func:`bus_cluster_problems`), asked of NATS's monitoring port
        through ``monitors`` (``host:port``, each a way to the Service, which answers from any
        server) until every stream's leader has been heard."""
        views: list[dict[str, Any]] = []
        problems = ["no server answered"]
        while time.monotonic() < deadline:
            for monitor in monitors:
                try:
                    views.append(await asyncio.to_thread(read_jsz, monitor))
                except (OSError, ValueError) as exc:
                    problems = [f"{monitor}: {exc}"]
                    continue
                views = views[-12:]  # the recent answers (a leader heard long ago may have changed)
                problems = bus_cluster_problems(views)
                if not problems:
                    return
            await asyncio.sleep(0.5)
        raise DeployFailed(f"the clustered bus did not form: {problems}")

    async def wait_consuming(self, deadline: float) -> None:
        """Every service has bound its durable consumer (the watcher declared the topology)."""
        try:
            await consuming.wait_consuming(self.bus("reader"), deadline, interval=0.2)
        except TimeoutError as exc:
            raise DeployFailed(str(exc)) from None
