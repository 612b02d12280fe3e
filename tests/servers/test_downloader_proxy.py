"""The downloader behind a forward proxy, as in a cluster whose egress goes through one: with
``HTTPS_PROXY`` an ``https://`` download is a ``CONNECT`` tunnel through the proxy (TLS end to end,
the certificate verified for the model host), with ``HTTP_PROXY`` an ``http://`` download is sent to
the proxy in absolute form, ``NO_PROXY`` sends a host direct, and the outbound address policy still
judges the host a download is for (the proxy's own address is operator configuration). The proxy
is a real one (asyncio, in the test) that forwards and logs each request line; the downloader is
the ``aim-download`` CLI of download Jobs, in its own process."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme
from aiohttp import web

from tests.file_server import FileServer
from tests.servers.test_downloader import last_json, run_cli

DATA = bytes(range(256)) * 4096  # 1 MiB


class ForwardProxy:
    """``CONNECT host:port`` tunnels and absolute-form ``GET http://...`` requests, each request
    line logged."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *headers = head.decode("latin-1").split("\r\n")
            self.lines.append(line)
            method, target, _ = line.split(" ", 2)
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:  # absolute form: forward with the origin form, one request per connection
                rest = target.removeprefix("http://")
                hostport, _, path = rest.partition("/")
                host, _, port = hostport.partition(":")
                up_reader, up_writer = await asyncio.open_connection(host, int(port or 80))
                kept = [h for h in headers if h and not h.lower().startswith(("connection:", "proxy-"))]
                request = f"{method} /{path} HTTP/1.1\r\n" + "".join(f"{h}\r\n" for h in kept)
                up_writer.write((request + "Connection: close\r\n\r\n").encode("latin-1"))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[ForwardProxy]:
    server = ForwardProxy()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[FileServer]:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "model.bin").write_bytes(DATA)
    server = FileServer(root)
    yield server
    server.stop()


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def tls_site(ca: trustme.CA) -> AsyncIterator[str]:
    """An HTTPS server on 127.0.0.1 with a certificate from ``ca``, serving ``/model.bin``."""

    async def model(request: web.Request) -> web.StreamResponse:
        return web.Response(body=DATA, content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/model.bin", model)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def downloaded(dest: Path) -> bool:
    return hashlib.sha256((dest / "model.bin").read_bytes()).digest() == hashlib.sha256(DATA).digest()


async def test_an_https_download_tunnels_through_https_proxy(
    proxy: ForwardProxy, tls_site: str, ca: trustme.CA, tmp_path: Path
) -> None:
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    dest = tmp_path / "dest"
    code, out, err = await run_cli(
        [f"{tls_site}/model.bin", str(dest)], {"HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": str(bundle)}
    )
    assert code == 0, (out, err)
    assert downloaded(dest)
    host = tls_site.removeprefix("https://")
    assert proxy.lines and {line.rsplit(" ", 1)[0] for line in proxy.lines} == {f"CONNECT {host}"}, (
        proxy.lines
    )


async def test_an_http_download_goes_through_http_proxy(
    proxy: ForwardProxy, plain: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "dest"
    code, out, err = await run_cli([f"{plain.base}/model.bin", str(dest)], {"HTTP_PROXY": proxy.url})
    assert code == 0, (out, err)
    assert downloaded(dest)
    assert proxy.lines and all(line.endswith(f" {plain.base}/model.bin HTTP/1.1") for line in proxy.lines)
    assert {line.split(" ")[0] for line in proxy.lines} <= {"GET", "HEAD"}


async def test_no_proxy_sends_the_host_direct(proxy: ForwardProxy, plain: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    code, out, err = await run_cli(
        [f"{plain.base}/model.bin", str(dest)],
        {"HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url, "NO_PROXY": "example.com,127.0.0.0/8"},
    )
    assert code == 0, (out, err)
    assert downloaded(dest)
    assert proxy.lines == []
    assert plain.requests


async def test_the_policy_still_judges_the_host_behind_the_proxy(proxy: ForwardProxy, tmp_path: Path) -> None:
    """127.0.0.2 is refused by the tests' policy (127.0.0.1 and localhost allow-listed); the proxy
    (on 127.0.0.1, but it would be allowed anywhere: operator configuration) is never asked."""
    root = tmp_path / "other"
    root.mkdir()
    (root / "model.bin").write_bytes(DATA)
    other = FileServer(root, host="127.0.0.2")
    try:
        code, out, _ = await run_cli(
            [f"{other.base}/model.bin", str(tmp_path / "dest")], {"HTTP_PROXY": proxy.url}
        )
    finally:
        other.stop()
    assert code != 0
    assert last_json(out)["reason"] == "AddressNotAllowed", out
    assert proxy.lines == []
    assert other.requests == []
