"""The NATS pod's reloader sidecar: nats-server re-reads its configuration on SIGHUP but does not
watch its files, and the bus's accepted keys (``/etc/nats-keys/<role>.conf``, from the Secrets
``aim-bus-<role>``) and, with TLS, its certificate (``/etc/nats-tls``, the Secret ``aim-bus-tls``)
change in place when they are rotated (the kubelet updates a Secret volume within a minute or two).
This polls the files and signals nats-server when they change, so a rotation reaches the server with
no restart (docs/deploy.md, "Rotating the bus keys").

It runs in the NATS pod (shared process namespace, same user) and finds nats-server through its pid
file (``nats-server -P``). A signal that cannot be sent (no pid file yet) is tried again on the next
poll; a server that starts later reads the current files anyway.

``python -m aimcore.runtime.natsreload --dir DIR [--dir DIR...] --pid-file FILE [--interval SECONDS]``
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger("aim-nats-reloader")


def digest(directories: Sequence[Path]) -> str:
    """What the watched files say: their names and contents (a Secret volume's hidden entries,
    ``..data`` and the timestamped directories, are skipped; the visible names are links into them)."""
    h = hashlib.sha256()
    files = (p for d in directories for p in sorted(d.iterdir()) if not p.name.startswith("."))
    for path in files:
        h.update(str(path).encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except FileNotFoundError:  # swapped while listed: the next poll sees the new set
            h.update(b"\0missing")
        h.update(b"\0")
    return h.hexdigest()


def signal_server(pid_file: Path) -> None:
    """SIGHUP to the nats-server whose pid ``pid_file`` holds (``OSError``, ``ValueError``: not now)."""
    os.kill(int(pid_file.read_text().strip()), signal.SIGHUP)


def watch(
    directories: Sequence[Path],
    pid_file: Path,
    interval: float,
    *,
    polls: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll ``directories`` every ``interval`` seconds; signal the server after each change
    (``polls``: stop after that many, for tests)."""
    applied = digest(directories)
    log.info(
        "watching %s for the bus's keys and certificates; nats-server pid file %s",
        ", ".join(map(str, directories)),
        pid_file,
    )
    done = 0
    while polls is None or done < polls:
        sleep(interval)
        done += 1
        current = digest(directories)
        if current == applied:
            continue
        try:
            signal_server(pid_file)
        except (OSError, ValueError) as exc:
            log.warning(
                "the bus's files changed but nats-server could not be signalled (%s); retrying",
                exc,
            )
            continue
        applied = current
        log.info("the bus's keys or certificates changed: nats-server reloads its configuration")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aim-nats-reloader", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dir", required=True, type=Path, action="append", help="a directory of watched files (repeatable)"
    )
    parser.add_argument("--pid-file", required=True, type=Path, help="nats-server's pid file (-P)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    watch(args.dir, args.pid_file, args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
