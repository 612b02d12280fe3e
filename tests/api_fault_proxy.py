"""A reverse proxy in front of the real API server that answers chosen requests with a server error
(issue 44: a read of a 1.2 MB object answered ``500 rpc error: code = Internal desc = unexpected
EOF``, etcd's client failing mid-message in kube-apiserver, under the full suite's load only).

It serves TLS with the API server's own certificate, so a copy of the cluster's kubeconfig that
names the proxy's address (:attr:`FaultProxy.kubeconfig`) is trusted as the original is, by the
tests' clients and by the services started with it (``AIM_KUBECONFIG``). Every other request goes
through to the API server unchanged, streamed (watches included). Runs on the test's event loop."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from aim_dev.local.cluster import ControlPlane

ETCD_UNEXPECTED_EOF = "rpc error: code = Internal desc = unexpected EOF"
"""The API server's message for the read that failed in issue 44 (etcd's client, surfacing)."""

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


@dataclass
class Fault:
    """The next ``times`` requests of ``method`` on exactly ``path`` (query aside) get ``status``."""

    method: str
    path: str
    times: int
    status: int = 500
    message: str = ETCD_UNEXPECTED_EOF
    answered: int = 0


@dataclass
class FaultProxy:
    cluster: ControlPlane
    workdir: Path
    faults: list[Fault] = field(default_factory=list)
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    """Every request seen: ``(method, path, status answered)``."""
    port: int = 0
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    def fail(self, method: str, path: str, times: int, status: int = 500) -> Fault:
        fault = Fault(method, path, times, status)
        self.faults.append(fault)
        return fault

    def seen(self, method: str, path: str, status: int | None = None) -> int:
        return sum(1 for m, p, s in self.requests if (m, p) == (method, path) and status in (None, s))

    @property
    def kubeconfig(self) -> str:
        return str(self.workdir / "kubeconfig")

    async def start(self) -> FaultProxy:
        self.workdir.mkdir(parents=True, exist_ok=True)
        upstream = ssl.create_default_context(cafile=str(self.cluster.pki / "apiserver.crt"))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=upstream), auto_decompress=False
        )
        served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        served.load_cert_chain(self.cluster.pki / "apiserver.crt", self.cluster.pki / "apiserver.key")
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=served)
        await site.start()
        self.port = self._runner.addresses[0][1]
        config = self.cluster.kubeconfig()
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.port}"  # type: ignore[index]
        await asyncio.to_thread(Path(self.kubeconfig).write_text, yaml.safe_dump(config))
        return self

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Upstream first: a watch passing through ends with it, instead of holding the server's
        shutdown until its timeout."""
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        asked = (request.method, request.path)
        fault = next((f for f in self.faults if (f.method, f.path) == asked and f.answered < f.times), None)
        if fault is not None:
            fault.answered += 1
            self.requests.append((request.method, request.path, fault.status))
            body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
            return web.json_response(
                {**body, "message": fault.message, "code": fault.status}, status=fault.status
            )
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in {"host", *_HOP_BY_HOP}}
        async with self._session.request(
            request.method,
            f"{self.cluster.server}{request.rel_url}",
            headers=headers,
            data=await request.read(),
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        ) as upstream:
            self.requests.append((request.method, request.path, upstream.status))
            response = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP},
            )
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
