"""A fake kubelet for tests against the local control plane (:mod:`aim_dev.local.cluster`).

The local control plane has no kubelet and no scheduler: Pods stay Pending with no node, and
``GET .../pods/{pod}/log`` has nowhere to go. This module plays the kubelet's part:

- :class:`FakeKubelet` is an HTTPS server on 127.0.0.1 (random port, a self-signed certificate made
  per instance with the ``openssl`` CLI) that serves ``GET /containerLogs/{ns}/{pod}/{container}``,
  the request kube-apiserver 1.20 makes for ``pods/log`` (``pkg/registry/core/pod/strategy.go``
  ``LogLocation``), honouring ``tailLines``, ``limitBytes``, ``timestamps`` and ``previous``.
  The API server is started without ``--kubelet-certificate-authority``, so it does not verify the
  certificate, and without a kubelet client certificate, so nothing here checks the caller either.
- :meth:`FakeKubelet.register_node` creates a Ready Node whose ``status.addresses`` (InternalIP and
  Hostname 127.0.0.1) and ``status.daemonEndpoints.kubeletEndpoint.Port`` point at that server,
  which is how the API server finds the kubelet of a pod's ``spec.nodeName``.
- :func:`bind_pod` (the scheduler's ``pods/binding``), :func:`start_pod`, :func:`set_waiting` and
  :func:`finish_pod` (the kubelet's status reports) move a Pod through its life, so controllers in
  kube-controller-manager (Job, ReplicaSet...) and the operator see what they would on a real node.

What the API server does with logs (1.20): a pod without ``spec.nodeName`` has an empty log (200,
no request to any kubelet); an unknown container, or none named in a pod with several, is its own
400; the pod's Node must exist. A kubelet's non-2xx status is passed on; the body becomes the
Status message for a 400 or 500 but is dropped for a 404 (our answer for a log never set), which
reads "the server could not find the requested resource ( pods/log {pod})". ``Accept: text/plain``
alone is refused (406); ask for ``text/plain, */*`` as :meth:`aimcore.runtime.kube.Kube.pod_log` does.

The server runs on the event loop that starts it: run blocking callers (``kubectl logs`` through
``subprocess``) in a thread (``asyncio.to_thread``), or the API server's request to it hangs.

kube-controller-manager runs without the node lifecycle controller (``-nodelifecycle``), so these
Nodes get no heartbeat checks, no ``unreachable`` taints and no evictions; the API server's
TaintNodesByCondition admission plugin still gives a new Node ``node.kubernetes.io/not-ready:NoSchedule``
(which that controller would lift), so :meth:`FakeKubelet.register_node` removes it. The pod GC
controller does run: pods bound to a Node that no longer exists are deleted after 40-60s. A bound,
non-terminal pod that is deleted waits (like on a real node) for its kubelet to confirm the deletion;
:meth:`FakeKubelet.cleanup` does that (``gracePeriodSeconds=0``) for every pod on its nodes.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import ssl
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from aiohttp import web

from aimcore.api.kinds import NODE, POD, KindRef
from aimcore.api.types import Obj
from aimcore.runtime import ApiException, Kube

__all__ = [
    "FakeKubelet",
    "KubeletRequest",
    "bind_pod",
    "finish_pod",
    "force_delete_pod",
    "set_waiting",
    "start_pod",
    "wait_for_service_account",
]

SERVICE_ACCOUNT = KindRef("", "v1", "ServiceAccount", "serviceaccounts", True)
DEFAULT_CAPACITY = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class KubeletRequest:
    """One request the fake kubelet received."""

    method: str
    path: str
    query: dict[str, str]
    namespace: str | None = None
    pod: str | None = None
    container: str | None = None


@dataclass
class _Log:
    text: str
    written_at: str
    error_status: int | None = None


def _close_accepted(host: str, port: int) -> None:
    """Close what the server on ``port`` accepted and aiohttp's cleanup left open (a connection of
    the API server still in its TLS handshake, say): left to the garbage collector, it would warn
    during some later test (a warning is an error in this suite). Only sockets bound to
    ``host:port``."""
    for obj in gc.get_objects():
        if not isinstance(obj, asyncio.Transport) or obj.is_closing():
            continue
        sock = obj.get_extra_info("socket")
        try:
            local = sock.getsockname() if sock is not None else None
        except OSError:
            continue
        if isinstance(local, tuple) and tuple(local[:2]) == (host, port):
            obj.abort()


@dataclass
class FakeKubelet:
    """An HTTPS ``/containerLogs`` server on 127.0.0.1 plus the Nodes that point at it.

    Use as ``async with FakeKubelet() as kubelet:`` or ``await kubelet.start()`` /
    ``await kubelet.stop()``; ``port`` is known once started."""

    host: str = "127.0.0.1"
    port: int = 0
    requests: list[KubeletRequest] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    _logs: dict[tuple[str, str, str, bool], _Log] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    _tmp: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> Self:
        if self._runner is not None:
            return self
        self._tmp = tempfile.TemporaryDirectory(prefix="fake-kubelet-")
        ctx = await asyncio.to_thread(self._tls_context, Path(self._tmp.name))
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(runner, sock, ssl_context=ctx).start()
        self._runner = runner
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            _close_accepted(self.host, self.port)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def _tls_context(self, tmp: Path) -> ssl.SSLContext:
        cert, key = tmp / "kubelet.crt", tmp / "kubelet.key"
        subprocess.run(
            [
                "openssl", "req", "-x509", "-nodes", "-days", "2",
                "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-keyout", str(key), "-out", str(cert),
                "-subj", f"/CN={self.host}", "-addext", f"subjectAltName=IP:{self.host}",
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, key)
        return ctx

    # -- logs --------------------------------------------------------------------------------

    def set_log(self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False) -> None:
        """Serve ``text`` as the container's log (``previous``: its last terminated instance's)."""
        self._logs[(namespace, pod, container, previous)] = _Log(text, _now())

    def set_log_error(
        self, namespace: str, pod: str, container: str, status: int, message: str, *, previous: bool = False
    ) -> None:
        """Answer the container's log requests with an error, as a real kubelet does for a container
        that has not started (400, ``container "c" in pod "p" is waiting to start: ...``). The API
        server passes the body of a 400 or 500 on as its message; a 404's body is dropped."""
        self._logs[(namespace, pod, container, previous)] = _Log(message, _now(), status)

    def clear_log(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> None:
        self._logs.pop((namespace, pod, container, previous), None)

    def log_requests(self, namespace: str, pod: str, container: str | None = None) -> list[KubeletRequest]:
        """The ``/containerLogs`` requests received for a pod (and container)."""
        return [
            r
            for r in self.requests
            if r.namespace == namespace and r.pod == pod and (container is None or r.container == container)
        ]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        parts = request.path.strip("/").split("/")
        query = {k: v for k, v in request.query.items()}
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.requests.append(KubeletRequest(request.method, request.path, query))
            return web.Response(status=404, text=f"fake kubelet: no handler for {request.path}\n")
        _, namespace, pod, container = parts
        self.requests.append(KubeletRequest(request.method, request.path, query, namespace, pod, container))
        if request.method != "GET":
            return web.Response(status=405, text="method not allowed\n")
        previous = query.get("previous") == "true"
        log = self._logs.get((namespace, pod, container, previous))
        if log is None:
            what = "previous terminated container" if previous else "container"
            return web.Response(
                status=404, text=f'{what} "{container}" in pod "{pod}" (namespace "{namespace}") has no log\n'
            )
        if log.error_status is not None:
            return web.Response(status=log.error_status, text=log.text)
        try:
            body = render_log(
                log.text,
                tail_lines=int(query["tailLines"]) if "tailLines" in query else None,
                limit_bytes=int(query["limitBytes"]) if "limitBytes" in query else None,
                timestamp=log.written_at if query.get("timestamps") == "true" else None,
            )
        except ValueError as exc:
            return web.Response(status=400, text=f"{exc}\n")
        return web.Response(body=body, content_type="text/plain", charset="utf-8")

    # -- nodes -------------------------------------------------------------------------------

    async def register_node(
        self,
        kube: Kube,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        allocatable: dict[str, str] | None = None,
    ) -> Obj:
        """Create (or update) a Ready Node served by this kubelet; returns the Node."""
        if self._runner is None:
            raise RuntimeError("start the FakeKubelet before registering nodes")
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        }
        if await kube.create_if_absent(NODE, body) is None:
            await kube.patch(NODE, None, name, {"metadata": {"labels": body["metadata"]["labels"]}})
        if name not in self.nodes:
            self.nodes.append(name)
        resources = {**DEFAULT_CAPACITY, **(allocatable or {})}
        now = _now()
        status: Obj = {
            "addresses": [
                {"type": "InternalIP", "address": self.host},
                {"type": "Hostname", "address": self.host},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "fake kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.20.2",
                "kubeProxyVersion": "v1.20.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "fake://0",
                "osImage": "fake",
                "kernelVersion": "fake",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }
        node = await kube.patch_status(NODE, None, name, {"status": status})
        # The TaintNodesByCondition admission plugin gives every new Node the not-ready:NoSchedule
        # taint; the node lifecycle controller (not running here) lifts it once the Node is Ready.
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
        if kept != taints:
            node = await kube.patch(NODE, None, name, {"spec": {"taints": kept or None}})
        return node

    async def cleanup(self, kube: Kube) -> None:
        """Confirm the deletion of every pod on this kubelet's nodes (gracePeriodSeconds=0), then
        delete the nodes."""
        for node in self.nodes:
            page = await kube._call("GET", POD.path(), query=[("fieldSelector", f"spec.nodeName={node}")])
            for pod in page.get("items") or []:
                meta = pod["metadata"]
                await force_delete_pod(kube, meta["namespace"], meta["name"])
            await kube.delete(NODE, None, node)
        self.nodes.clear()


def render_log(
    text: str, *, tail_lines: int | None = None, limit_bytes: int | None = None, timestamp: str | None = None
) -> bytes:
    """The kubelet's rendering of a log: optional timestamps, then the last ``tail_lines`` lines,
    then at most ``limit_bytes`` bytes."""
    if (tail_lines is not None and tail_lines < 0) or (limit_bytes is not None and limit_bytes < 1):
        raise ValueError("tailLines must be >= 0 and limitBytes >= 1")
    lines = text.splitlines(keepends=True)
    if tail_lines is not None:
        lines = lines[len(lines) - tail_lines :] if tail_lines else []
    if timestamp is not None:
        lines = [f"{timestamp} {line}" for line in lines]
    data = "".join(lines).encode()
    return data[:limit_bytes] if limit_bytes is not None else data


# ---------------------------------------------------------------------------------------------
# Playing the scheduler's and the kubelet's part for a pod
# ---------------------------------------------------------------------------------------------


async def bind_pod(kube: Kube, namespace: str, pod_name: str, node_name: str) -> None:
    """Bind the pod to the node as the scheduler does (``pods/binding``; 409 if already bound)."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod_name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    await kube._call("POST", POD.path(namespace, pod_name) + "/binding", body=binding)


async def wait_for_service_account(
    kube: Kube, namespace: str, name: str = "default", timeout: float = 30.0
) -> Obj:
    """Wait until the service account exists with its token Secret. Until then the ServiceAccount
    admission plugin rejects pods that use it (500 "No API token found for service account"), which
    is what a Pod created right after its namespace runs into; controllers retry, tests should wait."""
    async with asyncio.timeout(timeout):
        while True:
            sa = await kube.get(SERVICE_ACCOUNT, namespace, name)
            if sa is not None and sa.get("secrets"):
                return sa
            await asyncio.sleep(0.05)


async def force_delete_pod(kube: Kube, namespace: str, pod_name: str) -> bool:
    """Delete the pod with ``gracePeriodSeconds=0``, as a kubelet confirms a pod's termination."""
    try:
        await kube._call(
            "DELETE",
            POD.path(namespace, pod_name),
            body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
        )
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def _images(pod: Obj, key: str = "containers") -> dict[str, str]:
    return {c["name"]: c.get("image", "") for c in (pod.get("spec") or {}).get(key) or []}


def _status(name: str, image: str, state: Obj, *, ready: bool = False, started: bool = False) -> Obj:
    status: Obj = {
        "name": name,
        "state": state,
        "ready": ready,
        "restartCount": 0,
        "image": image,
        "imageID": f"{image}@sha256:{'0' * 64}" if "running" in state or "terminated" in state else "",
        "started": started,
    }
    if "running" in state or "terminated" in state:
        status["containerID"] = f"fake://{name}"
    return status


def _conditions(*, ready: bool, reason: str | None, now: str) -> list[Obj]:
    def cond(kind: str, ok: bool, why: str | None = None) -> Obj:
        out: Obj = {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": now}
        if why and not ok:
            out["reason"] = why
        return out

    return [
        cond("Initialized", True),
        cond("Ready", ready, reason),
        cond("ContainersReady", ready, reason),
        cond("PodScheduled", True),
    ]


async def _get_pod(kube: Kube, namespace: str, pod_name: str) -> Obj:
    pod = await kube.get(POD, namespace, pod_name)
    if pod is None:
        raise LookupError(f"pod {namespace}/{pod_name} not found")
    return pod


async def start_pod(kube: Kube, namespace: str, pod_name: str, *, ready: bool = True) -> Obj:
    """Report the pod Running: every container running (and ready when ``ready``), a pod IP."""
    pod = await _get_pod(kube, namespace, pod_name)
    now = _now()
    images = _images(pod)
    init_images = _images(pod, "initContainers")
    status: Obj = {
        "phase": "Running",
        "hostIP": "127.0.0.1",
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "startTime": (pod.get("status") or {}).get("startTime") or now,
        "conditions": _conditions(ready=ready, reason=None if ready else "ContainersNotReady", now=now),
        "containerStatuses": [
            _status(n, images[n], {"running": {"startedAt": now}}, ready=ready, started=True) for n in images
        ],
    }
    if init_images:
        done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
        status["initContainerStatuses"] = [_status(n, init_images[n], done) for n in init_images]
    return await kube.patch_status(POD, namespace, pod_name, {"status": status})


async def set_waiting(
    kube: Kube, namespace: str, pod_name: str, reason: str, message: str, *, container: str | None = None
) -> Obj:
    """Report the pod Pending with its containers (or just ``container``) waiting, e.g.
    ``ImagePullBackOff`` / ``ErrImagePull`` / ``CrashLoopBackOff``."""
    pod = await _get_pod(kube, namespace, pod_name)
    now = _now()
    images = _images(pod)
    names = [container] if container else list(images)
    waiting = {"waiting": {"reason": reason, "message": message}}
    others = {"waiting": {"reason": "ContainerCreating"}}
    status: Obj = {
        "phase": "Pending",
        "hostIP": "127.0.0.1",
        "startTime": (pod.get("status") or {}).get("startTime") or now,
        "conditions": _conditions(ready=False, reason="ContainersNotReady", now=now),
        "containerStatuses": [_status(n, images[n], waiting if n in names else others) for n in images],
    }
    return await kube.patch_status(POD, namespace, pod_name, {"status": status})


async def finish_pod(
    kube: Kube,
    namespace: str,
    pod_name: str,
    *,
    exit_code: int = 0,
    reason: str | None = None,
    message: str | None = None,
    container: str | None = None,
) -> Obj:
    """Report the pod terminated: ``container`` (default: every container) exits with ``exit_code``
    (``reason`` defaults to Completed / Error), the others with 0; the phase is Failed when any exit
    code is non-zero, else Succeeded."""
    pod = await _get_pod(kube, namespace, pod_name)
    now = _now()
    started = (pod.get("status") or {}).get("startTime") or now
    images = _images(pod)
    if container is not None and container not in images:
        raise ValueError(f"pod {namespace}/{pod_name} has no container {container!r}")
    statuses: list[Obj] = []
    failed = False
    for name in images:
        target = container is None or name == container
        code = exit_code if target else 0
        failed = failed or code != 0
        term: Obj = {
            "exitCode": code,
            "reason": (reason if target else None) or ("Completed" if code == 0 else "Error"),
            "startedAt": started,
            "finishedAt": now,
            "containerID": f"fake://{name}",
        }
        if message and target:
            term["message"] = message
        statuses.append(_status(name, images[name], {"terminated": term}))
    status: Obj = {
        "phase": "Failed" if failed else "Succeeded",
        "hostIP": "127.0.0.1",
        "startTime": started,
        "conditions": _conditions(ready=False, reason="PodCompleted", now=now),
        "containerStatuses": statuses,
    }
    init_images = _images(pod, "initContainers")
    if init_images:
        done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now}}
        status["initContainerStatuses"] = [_status(n, init_images[n], done) for n in init_images]
    return await kube.patch_status(POD, namespace, pod_name, {"status": status})
