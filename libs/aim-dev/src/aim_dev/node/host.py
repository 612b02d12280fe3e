"""What a node leaves on the host, found and removed by the node's id alone (docs/node.md).

A node's processes may outlive whoever started it: containerd's shims re-parent themselves and
keep the containers running after containerd, the kubelet and the test that started them are
gone. So cleanup never relies on remembered PIDs. It finds what belongs to a node by marks that
only that node's things carry:

- processes: the node's id in their environment (``AIM_NODE_ID``; every process the node starts
  has it, and containerd passes it on to its shims) or a cgroup under the node's cgroup root (the
  containers);
- cgroups: the directory named for the node in every cgroup hierarchy;
- the network namespace named for the node (its iptables rules and interfaces go with it);
- mounts: every mount of the node is in its private mount namespace, which disappears with its
  last process; :func:`mounts_under` checks that none is visible on the host.

Nothing here acts on anything that does not carry the node's id.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

MARKER = "AIM_NODE_ID"
CGROUP_FS = Path("/sys/fs/cgroup")


class NodeError(RuntimeError):
    """The node cannot start (what is missing is in the message) or could not be removed."""


# -- processes ----------------------------------------------------------------------------------


def _pids() -> Iterator[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def _environ_has(pid: int, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _in_cgroup(pid: int, root: str) -> bool:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        path = line.split(":", 2)[-1]
        if path == root or path.startswith(root + "/"):
            return True
    return False


def node_processes(node_id: str) -> list[int]:
    """Every live process of the node: marked in its environment, or in the node's cgroups. (A
    zombie has neither any more, so an unreaped child of the caller does not count.)"""
    needle = f"{MARKER}={node_id}".encode()
    root = f"/{node_id}"
    me = os.getpid()
    return [pid for pid in _pids() if pid != me and (_environ_has(pid, needle) or _in_cgroup(pid, root))]


def kill_processes(node_id: str, timeout: float = 20.0) -> list[int]:
    """SIGKILL every process of the node until none is left (a dying shim may still start one);
    returns the PIDs killed. Raises :class:`NodeError` if some survive ``timeout``."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        pids = node_processes(node_id)
        if not pids:
            return killed
        if time.monotonic() > deadline:
            raise NodeError(f"processes of {node_id} survived SIGKILL: {pids}")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                if pid not in killed:
                    killed.append(pid)
        time.sleep(0.05)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (with the PID, a unique identity)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


# -- cgroups --------------------------------------------------------------------------------------


def cgroup_hierarchies() -> list[Path]:
    """The mount points of every cgroup hierarchy (v1 controllers and the v2 one, if mounted)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype = right.split()[0] if right else ""
        if fstype in ("cgroup", "cgroup2"):
            found.append(Path(left.split()[4]))
    return found


def create_cgroups(node_id: str) -> None:
    """The node's cgroup root in every hierarchy (the kubelet requires its ``cgroupRoot`` to exist)."""
    for hierarchy in cgroup_hierarchies():
        path = hierarchy / node_id
        path.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):  # an empty cpuset admits no process
            mine, parent = path / name, hierarchy / name
            if mine.exists() and not mine.read_text().strip():
                mine.write_text(parent.read_text())


def node_cgroups(node_id: str) -> list[Path]:
    return [h / node_id for h in cgroup_hierarchies() if (h / node_id).is_dir()]


def remove_cgroups(node_id: str, timeout: float = 20.0) -> None:
    """Remove the node's cgroup directories, deepest first (a cgroup empties a moment after its
    last process dies, so ``EBUSY`` is retried until ``timeout``)."""
    deadline = time.monotonic() + timeout
    for top in node_cgroups(node_id):
        dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for d in [*dirs, top]:
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        raise NodeError(f"cannot remove cgroup {d}: {exc}") from None
                    time.sleep(0.1)


# -- network namespace ----------------------------------------------------------------------------


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NodeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def netns_exists(name: str) -> bool:
    return (Path("/run/netns") / name).exists()


def delete_netns(name: str) -> None:
    if netns_exists(name):
        ip("netns", "delete", name)


# -- mounts ---------------------------------------------------------------------------------------


def mounts_under(path: Path) -> list[str]:
    """Mount points at or under ``path`` in this (the host's) mount namespace."""
    prefix = str(path.resolve())
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(point)
    return found
