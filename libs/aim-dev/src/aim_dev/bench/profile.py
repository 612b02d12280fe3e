"""Sampling profiles of the services during a benchmark's burst (``--profile DIR``).

The budgets of issue 20 are CPU per object; to find where that CPU goes, a benchmark can run
py-spy (a dev dependency) on each service's process for the length of its burst. Each profile is
written as py-spy's collapsed stacks (``<service>.txt``, one ``frame;frame;… count`` line per
stack, readable by flamegraph.pl, speedscope and inferno) and summarised here: the frames with the
most samples on top of the stack (self) and anywhere in it (total), as a share of the process's
samples. py-spy leaves out samples of an idle process (the event loop waiting in ``epoll``), so
the percentages are of the time the process was busy; any waiting frame that gets through is
counted apart.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
