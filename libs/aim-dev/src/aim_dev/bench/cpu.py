"""Who used the CPU over a stretch of a benchmark: each named process (user + system time, from
``/proc/PID/stat``) and the whole machine (``/proc/stat``).

On a small machine the control plane, the operator and the benchmark's own client share the same
cores, and a burst keeps all of them busy: a throughput figure is then a share of the machine, not
a property of the operator alone. The split says which part of a burst's CPU the operator spent
and what everything else cost, so a throughput budget that the operator cannot reach shows its
floor in every run: :meth:`Split.seconds_without` is how long the same work would take if the
operator's own CPU were free and nothing else changed."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, *, system_only: bool = False) -> float:
    """User + system CPU time of a process so far (``system_only``: the kernel's part)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (stime if system_only else utime + stime) / CLOCK_TICKS


@dataclass(frozen=True)
class Machine:
    """Core-seconds the whole machine has spent so far: ``busy`` (user, nice, system, interrupts)
    and ``stolen`` (the hypervisor ran something else while this machine wanted a core)."""

    busy: float
    stolen: float

    @classmethod
    def read(cls, stat: str | None = None) -> Machine:
        """From ``/proc/stat``'s first line (or ``stat``, that line's text)."""
        if stat is None:
            with open("/proc/stat") as f:
                stat = f.readline()
        name, *values = stat.split()
        if name != "cpu":
            raise ValueError(f"not the machine's line of /proc/stat: {stat!r}")
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in values[:8])
        return cls((user + nice + system + irq + softirq) / CLOCK_TICKS, steal / CLOCK_TICKS)


@dataclass(frozen=True)
class Sample:
    at: float
    processes: dict[str, float]
    machine: Machine


def cpu_of(pids: Mapping[str, int]) -> dict[str, float]:
    """Every named process's CPU so far (:func:`cpu_seconds`)."""
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def sample(pids: Mapping[str, int]) -> Sample:
    """Every named process's CPU so far, and the machine's."""
    return Sample(time.monotonic(), cpu_of(pids), Machine.read())


@dataclass(frozen=True)
class Split:
    """The CPU spent between two samples."""

    seconds: float
    processes: dict[str, float]
    busy: float
    stolen: float
    cores: int

    @classmethod
    def between(cls, first: Sample, last: Sample, cores: int | None = None) -> Split:
        return cls(
            seconds=last.at - first.at,
            processes={n: last.processes[n] - t for n, t in first.processes.items() if n in last.processes},
            busy=last.machine.busy - first.machine.busy,
            stolen=last.machine.stolen - first.machine.stolen,
            cores=cores or os.cpu_count() or 1,
        )

    def of(self, names: Iterable[str]) -> float:
        """CPU-seconds of the named processes together."""
        return sum(self.processes.get(n, 0.0) for n in names)

    @property
    def busy_cores(self) -> float:
        """How many of the machine's cores were busy on average."""
        return self.busy / self.seconds if self.seconds > 0 else 0.0

    def seconds_without(self, names: Iterable[str]) -> float:
        """How long the stretch would have taken had the named processes' CPU been free: the rest of
        the machine's busy time spread over all its cores (it was saturated in a burst). A lower
        bound — the work those processes cause elsewhere (the API server serving the operator's
        watches and writes) stays in the rest."""
        return max(0.0, self.busy - self.of(names)) / self.cores

    def figures(self) -> dict[str, float]:
        """For a benchmark's JSON: each process's CPU-seconds, ``other`` (the machine's busy time
        no named process accounts for), ``busy_cores`` and ``stolen_cores``."""
        out = {n: round(t, 2) for n, t in sorted(self.processes.items())}
        out["other"] = round(max(0.0, self.busy - sum(self.processes.values())), 2)
        out["busy_cores"] = round(self.busy_cores, 2)
        out["stolen_cores"] = round(self.stolen / self.seconds if self.seconds > 0 else 0.0, 3)
        return out
