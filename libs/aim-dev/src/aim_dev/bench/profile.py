"""Sampling profiles of the services during a benchmark's burst (``--profile DIR``).

The budgets of issue 20 are CPU per object; to find where that CPU goes, a benchmark can run
py-spy (a dev dependency) on each service's process for the length of its burst. Each profile is
written as py-spy's collapsed stacks (``<service>.txt``, one ``frame;frame;… count`` line per
stack, readable by flamegraph.pl, speedscope and inferno) and summarised here: the frames with the
most samples on top of the stack (self) and anywhere in it (total), as a share of the process's
samples. py-spy leaves out samples of an idle process (the event loop waiting in ``epoll``), so
the percentages are of the time the process was busy; any waiting frame that gets through is
counted apart.

The API server is profiled too when the stack serves Go's profiles (:class:`ApiServerProfiler`:
its CPU profile over the burst's first seconds, ``kube-apiserver.pprof``, for ``go tool pprof``):
on a small machine it spends as much of a burst's CPU as the operator does.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aim_dev.local.cluster import ControlPlane

# Frames where a process waits rather than works (py-spy's --idle keeps them).
IDLE_MARKERS = ("select (selectors.py", "epoll_wait", "poll (selectors.py")


@dataclass
class Profile:
    """Samples of one process, from py-spy's collapsed output."""

    name: str
    samples: int = 0
    idle: int = 0
    self_counts: Counter[str] = field(default_factory=Counter)
    total_counts: Counter[str] = field(default_factory=Counter)

    @classmethod
    def parse(cls, name: str, text: str) -> Profile:
        profile = cls(name)
        for line in text.splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [f for f in stack.split(";") if f]
            if not frames:
                continue
            profile.samples += count
            if any(marker in frames[-1] for marker in IDLE_MARKERS):
                profile.idle += count
                continue
            profile.self_counts[frames[-1]] += count
            for frame in set(frames):
                profile.total_counts[frame] += count
        return profile

    @property
    def busy(self) -> int:
        return self.samples - self.idle

    def summary(self, top: int = 15) -> str:
        busy = max(1, self.busy)
        lines = [f"{self.name}: {self.samples} samples, {self.busy} busy"]
        lines.append("  self (busy %):")
        lines += [f"    {100 * c / busy:5.1f}  {f}" for f, c in self.self_counts.most_common(top)]
        lines.append("  total (busy %):")
        lines += [f"    {100 * c / busy:5.1f}  {f}" for f, c in self.total_counts.most_common(top)]
        return "\n".join(lines)


class Profiler:
    """py-spy recording each of ``pids`` into ``directory`` between :meth:`start` and :meth:`stop`."""

    def __init__(self, directory: Path, pids: Mapping[str, int], *, native: bool = False) -> None:
        self.directory = directory
        self.pids = dict(pids)
        self.native = native
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @staticmethod
    def available() -> str | None:
        return shutil.which("py-spy")

    def start(self) -> None:
        exe = self.available()
        if exe is None:
            raise RuntimeError("py-spy is not installed (it is in the dev dependency group: uv sync)")
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, pid in self.pids.items():
            out = self.directory / f"{name}.txt"
            cmd = [exe, "record", "--pid", str(pid), "--format", "raw", "--output", str(out)]
            cmd += ["--rate", "200", "--nonblocking", "--function"]
            if self.native:
                cmd.append("--native")
            log = (self.directory / f"{name}.py-spy.log").open("wb")
            self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> dict[str, Profile]:
        """Stop recording; the parsed profile of each service whose output was written."""
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        profiles = {}
        for name in self.procs:
            out = self.directory / f"{name}.txt"
            if out.exists():
                profiles[name] = Profile.parse(name, out.read_text())
        return profiles


class ApiServerProfiler:
    """The API server's Go CPU profile for ``seconds`` from :meth:`start`, fetched from its
    ``/debug/pprof/profile`` (the stack started with ``profiling``) into
    ``directory/kube-apiserver.pprof``; :meth:`stop` waits for it and says where it is."""

    FILE = "kube-apiserver.pprof"

    def __init__(self, cluster: ControlPlane, directory: Path, seconds: int = 6) -> None:
        self.cluster = cluster
        self.out = directory / self.FILE
        self.seconds = seconds
        self.error: str | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._fetch, name="apiserver-pprof", daemon=True)
        self._thread.start()

    def _fetch(self) -> None:
        path = f"/debug/pprof/profile?seconds={self.seconds}"
        try:
            self.out.write_bytes(self.cluster.fetch(path, timeout=self.seconds + 30))
        except OSError as exc:
            self.error = f"{exc}"

    def stop(self) -> str:
        """Wait for the profile; a line saying where it is (or why there is none)."""
        if self._thread is not None:
            self._thread.join(timeout=self.seconds + 60)
        if self.error is not None or not self.out.exists():
            return f"kube-apiserver: no profile ({self.error or 'not fetched'})"
        return (
            f"kube-apiserver: Go CPU profile of the burst's first {self.seconds} s in {self.out} "
            f"(go tool pprof -top -cum {self.out})"
        )
