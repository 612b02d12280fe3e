"""TCP forwarding between the host's network namespace and the node's, in one small process.

The control plane and NATS stay on the host's loopback (where tests, ``aimctl`` and ``kubectl``
reach them), and the node's network namespace has no link to the host at all. This process bridges
exactly the ports that must cross, and nothing else:

- node -> host: the API server for the kubelet, the scheduler and pods (on ``127.0.0.1:<port>``
  and on the ``kubernetes`` Service's address, which pods get as ``KUBERNETES_SERVICE_HOST``), and
  whatever else pods need (NATS, for the operator's Jobs);
- host -> node: the kubelet's port, through which the API server serves ``kubectl logs``/``exec``.

A socket stays in the network namespace it was created in, so the process switches its thread into
the listening side's namespace to create a listener and into the target side's to create each
outgoing socket (``setns``), then back to the host's.

Run as ``python -m aim_dev.node.forward --netns /run/netns/NAME --ready FILE SPEC...`` with each
SPEC ``SIDE:ADDR:PORT=SIDE:ADDR:PORT`` (listen = target; SIDE is ``host`` or ``node``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNET = 0x40000000
SIDES = ("host", "node")


@dataclass(frozen=True)
class Endpoint:
    side: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.side}:{self.host}:{self.port}"


@dataclass(frozen=True)
class Forward:
    listen: Endpoint
    target: Endpoint

    def __str__(self) -> str:
        return f"{self.listen}={self.target}"

    @classmethod
    def parse(cls, spec: str) -> Forward:
        try:
            listen, target = (_endpoint(part) for part in spec.split("=", 1))
        except ValueError as exc:
            raise ValueError(f"bad forward {spec!r} (want SIDE:ADDR:PORT=SIDE:ADDR:PORT): {exc}") from None
        return cls(listen, target)


def _endpoint(text: str) -> Endpoint:
    side, host, port = text.rsplit(":", 2)
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    return Endpoint(side, host, int(port))


class Namespaces:
    """File descriptors of the two network namespaces, and switching the current thread between them."""

    def __init__(self, node_netns: Path) -> None:
        self._libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fds = {
            "host": os.open("/proc/self/ns/net", os.O_RDONLY),
            "node": os.open(node_netns, os.O_RDONLY),
        }

    def _setns(self, side: str) -> None:
        if self._libc.setns(self.fds[side], CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into the {side} network namespace: {os.strerror(err)}")

    @contextlib.contextmanager
    def inside(self, side: str) -> Iterator[None]:
        self._setns(side)
        try:
            yield
        finally:
            self._setns("host")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _serve(ns: Namespaces, fwd: Forward) -> asyncio.Server:
    with ns.inside(fwd.listen.side):
        listener = socket.create_server((fwd.listen.host, fwd.listen.port), backlog=128)
    listener.setblocking(False)

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        with ns.inside(fwd.target.side):
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        upstream.setblocking(False)
        try:
            await asyncio.wait_for(
                asyncio.get_running_loop().sock_connect(upstream, (fwd.target.host, fwd.target.port)), 10
            )
        except (OSError, TimeoutError):
            upstream.close()
            client_w.close()
            return
        up_r, up_w = await asyncio.open_connection(sock=upstream)
        await asyncio.gather(_pipe(client_r, up_w), _pipe(up_r, client_w))
        for w in (up_w, client_w):
            w.close()

    return await asyncio.start_server(handle, sock=listener)


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def run(netns: Path, forwards: Sequence[Forward], ready: Path | None) -> None:
    ns = Namespaces(netns)
    servers = [await _serve(ns, fwd) for fwd in forwards]
    for fwd in forwards:
        print(f"forwarding {fwd}", flush=True)
    if ready is not None:
        _write(ready, "\n".join(str(f) for f in forwards) + "\n")
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aim_dev.node.forward")
    parser.add_argument("--netns", type=Path, required=True, help="the node's network namespace file")
    parser.add_argument("--ready", type=Path, help="written once every listener is bound")
    parser.add_argument("forwards", nargs="+", metavar="SPEC")
    args = parser.parse_args(argv)
    try:
        forwards = [Forward.parse(s) for s in args.forwards]
    except ValueError as exc:
        parser.error(str(exc))
    try:
        asyncio.run(run(args.netns, forwards, args.ready))
    except OSError as exc:
        print(f"forward: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
