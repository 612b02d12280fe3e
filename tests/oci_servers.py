"""Small real registries for the outbound-policy tests (aiohttp servers in the test's loop): a
registry on 127.0.0.1 that can challenge for Basic or Bearer credentials (with a realm the test
chooses) and redirect blob GETs anywhere, and "another host" on 127.0.0.2 (Linux routes all of
127/8 to lo) serving a token service and a blob store, each logging what reached it."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

PASSWORD = "pull-secret-DO-NOT-LEAK"
BASIC = "Basic " + base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
METADATA_URL = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
CONFIG = json.dumps({"os": "linux", "architecture": "amd64", "config": {"Labels": {"k": "v"}}}).encode()


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(CONFIG), "size": 1},
        "layers": [],
    }
).encode()


@dataclass
class Servers:
    registry: str = ""  # host:port on 127.0.0.1
    other: str = ""  # http://127.0.0.2:<port>: another host (Linux routes all of 127/8 to lo)
    other_port: int = 0
    same_host: str = ""  # http://127.0.0.1:<port>: the same service on the registry's host
    realm: str = ""  # the Bearer realm the registry names
    basic: bool = False  # the registry asks for Basic credentials instead
    blob_location: str = ""  # where blob GETs are redirected
    manifest: bytes = MANIFEST  # what the manifest GETs answer
    registry_log: list[tuple[str, str | None]] = field(default_factory=list)
    other_log: list[tuple[str, str | None]] = field(default_factory=list)  # (host + path, auth)


@contextlib.asynccontextmanager
async def registry_servers() -> AsyncIterator[Servers]:
    state = Servers()

    def authorized(request: web.Request) -> bool:
        if state.basic:
            return request.headers.get("Authorization") == BASIC
        return not state.realm or request.headers.get("Authorization") == "Bearer granted"

    def challenge() -> web.Response:
        scheme = 'Basic realm="reg"' if state.basic else f'Bearer realm="{state.realm}",service="reg"'
        return web.json_response(
            {"errors": [{"code": "UNAUTHORIZED"}]}, status=401, headers={"WWW-Authenticate": scheme}
        )

    async def manifest(request: web.Request) -> web.Response:
        state.registry_log.append((request.path, request.headers.get("Authorization")))
        if not authorized(request):
            return challenge()
        return web.Response(body=state.manifest, content_type="application/vnd.oci.image.manifest.v1+json")

    async def blob(request: web.Request) -> web.Response:
        state.registry_log.append((request.path, request.headers.get("Authorization")))
        if not authorized(request):
            return challenge()
        raise web.HTTPTemporaryRedirect(state.blob_location)

    async def other(request: web.Request) -> web.Response:
        """The other host: a token service (which would hand out a token) and a blob store."""
        state.other_log.append((request.host + request.path, request.headers.get("Authorization")))
        if request.path == "/token":
            return web.json_response({"token": "granted", "expires_in": 300})
        return web.Response(body=CONFIG)

    registry_app = web.Application()
    registry_app.router.add_get("/v2/{name:.+}/manifests/{ref}", manifest)
    registry_app.router.add_get("/v2/{name:.+}/blobs/{digest}", blob)
    other_app = web.Application()
    other_app.router.add_get("/{tail:.*}", other)
    runners = []
    for app, addresses in ((registry_app, ["127.0.0.1"]), (other_app, ["127.0.0.2", "127.0.0.1"])):
        runner = web.AppRunner(app)
        await runner.setup()
        for address in addresses:
            await web.TCPSite(runner, address, 0).start()
        runners.append(runner)
    state.registry = f"127.0.0.1:{runners[0].addresses[0][1]}"
    state.other_port = runners[1].addresses[0][1]
    state.other = f"http://127.0.0.2:{state.other_port}"
    state.same_host = f"http://127.0.0.1:{runners[1].addresses[1][1]}"
    try:
        yield state
    finally:
        for runner in runners:
            await runner.cleanup()
