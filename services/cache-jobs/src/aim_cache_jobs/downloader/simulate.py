"""The released original's debug simulation switches, honoured by ``aim-download``.

Why this exists: the released AIM Engine's own end-to-end tests (``progress-and-verification``,
``protocol-switching``) fake their downloads by setting ``AIM_DEBUG_*`` variables in an
``AIMArtifact``'s ``spec.env``, which reaches the download Job's environment as the model cache's
env. Its downloader image (``entrypoint.sh``, ``hf-download.sh``) then sleeps, writes zeros and
fails or succeeds on command. For those tests to pass against this operator, the download Job must
do the same, reporting it exactly as a real download is reported (attempts, progress offers,
result line, exit code), so that the cache service turns it into the same status.

:func:`parse` reads the switches (pure); :func:`simulate` runs what they ask with the contract of
:func:`~aim_cache_jobs.downloader.sequence.download_in_sequence` (same callbacks, ``(Manifest,
Attempt)`` or :class:`~aim_cache_jobs.downloader.sequence.SequenceFailed`). It never opens a
connection. In the original's order of precedence:

- ``AIM_DEBUG_CAUSE_HANG``: wait until stopped (SIGTERM: the usual exit 143).
- ``AIM_DEBUG_CAUSE_FAILURE``: fail at once (``DownloadFailed``), before any attempt.
- ``AIM_DEBUG_SIMULATE_DOWNLOAD`` (any source): one attempt (the sequence's first) downloading for
  ``AIM_DEBUG_DOWNLOAD_DURATION`` s (default 10), then every byte in and verifying for
  ``AIM_DEBUG_VERIFY_DURATION`` s (default 10); with ``AIM_DEBUG_VERIFY_FAIL`` the verification then
  fails as a real one does (``ChecksumMismatch``).
- ``AIM_DEBUG_SIMULATE_HF_DOWNLOAD`` (``hf://`` sources only, as in the original): every protocol of
  the sequence in turn, each attempt taking ``AIM_DEBUG_SIMULATE_HF_DURATION`` s (default 2); one
  named in ``AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS`` fails and the next is tried (``XET`` included:
  the simulation transfers nothing, so it can "succeed" with any protocol, as the original's does).

A successful simulation writes ``EXPECTED_SIZE_BYTES`` zero bytes (default: the original's, 1 MiB
for the general simulation, 100 KiB for the hf one; at most :data:`MAX_SIZE`) to
``simulated_data`` in the destination, and the manifest, as a real download would. Switches take
true/false-like values (``true``, ``1``, ``yes``, ``on``; ``false``, ``0``, ``no``, ``off`` or empty);
the original took any non-empty value as set, ``false`` too. Durations may be fractional.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from aim_cache_jobs.downloader import manifest as manifests
from aim_cache_jobs.downloader import protocols
from aim_cache_jobs.downloader.downloadstate import Attempt
from aim_cache_jobs.downloader.errors import CHECKSUM_MISMATCH, DOWNLOAD_FAILED, DownloadError
from aim_cache_jobs.downloader.listing import Digest
from aim_cache_jobs.downloader.manifest import Manifest, ManifestFile
from aim_cache_jobs.downloader.progress import Progress
from aim_cache_jobs.downloader.sequence import SequenceFailed
from aimcore.api.errors import AimError

log = logging.getLogger("aim_cache_jobs.downloader")

SIMULATE_HF = "AIM_DEBUG_SIMULATE_HF_DOWNLOAD"
HF_FAIL_PROTOCOLS = "AIM_DEBUG_SIMULATE_HF_FAIL_PROTOCOLS"
HF_DURATION = "AIM_DEBUG_SIMULATE_HF_DURATION"
SIMULATE = "AIM_DEBUG_SIMULATE_DOWNLOAD"
DOWNLOAD_DURATION = "AIM_DEBUG_DOWNLOAD_DURATION"
VERIFY_DURATION = "AIM_DEBUG_VERIFY_DURATION"
VERIFY_FAIL = "AIM_DEBUG_VERIFY_FAIL"
CAUSE_HANG = "AIM_DEBUG_CAUSE_HANG"
CAUSE_FAILURE = "AIM_DEBUG_CAUSE_FAILURE"
EXPECTED_SIZE = "EXPECTED_SIZE_BYTES"
MODES = (SIMULATE_HF, SIMULATE, CAUSE_HANG, CAUSE_FAILURE)
"""The switches that make a download a simulation (the others only tune one)."""

DATA_FILE = "simulated_data"
MAX_SIZE = 1024**3
"""The most ``EXPECTED_SIZE_BYTES`` a simulation writes (zeros on the model cache's volume)."""
TICK = 0.5
"""Seconds between two progress offers of a simulated transfer (the real downloader's)."""
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", ""})

ProgressCallback = Callable[[Progress], None]
AttemptCallback = Callable[[Attempt], None]


class SimulationSettingError(AimError, ValueError):
    """A debug switch with a value it cannot take: a usage error naming the variable."""


@dataclass(frozen=True)
class Simulation:
    """What the switches ask for; :attr:`active` is False when none is set (a real download)."""

    hang: bool = False
    cause_failure: bool = False
    simulate: bool = False
    download_duration: float = 10.0
    verify_duration: float = 10.0
    verify_fail: bool = False
    simulate_hf: bool = False
    hf_duration: float = 2.0
    hf_fail: frozenset[str] = frozenset()
    size: int | None = None  # EXPECTED_SIZE_BYTES; None: the mode's default

    @property
    def active(self) -> bool:
        return self.hang or self.cause_failure or self.simulate or self.simulate_hf

    def applies_to(self, source: str) -> bool:
        """Whether a download of ``source`` is simulated (the hf switch is for ``hf://`` only)."""
        hf = self.simulate_hf and source.lower().startswith("hf://")
        return self.hang or self.cause_failure or self.simulate or hf


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SimulationSettingError(f"{name}={env[name]!r}: expected true or false")


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise SimulationSettingError(f"{name}={text!r}: expected a number of seconds, 0 or more")
    return value


def _size(env: Mapping[str, str]) -> int | None:
    text = env.get(EXPECTED_SIZE, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) > MAX_SIZE:
        raise SimulationSettingError(f"{EXPECTED_SIZE}={text!r}: expected a number of bytes, 0 to {MAX_SIZE}")
    return int(text)


def _protocols(env: Mapping[str, str]) -> frozenset[str]:
    text = env.get(HF_FAIL_PROTOCOLS, "")
    names = {name.strip().upper() for name in text.split(",")} - {""}
    unknown = sorted(names - set(protocols.KNOWN))
    if unknown:
        raise SimulationSettingError(
            f"{HF_FAIL_PROTOCOLS}={text.strip()!r}: unknown {', '.join(unknown)} "
            f"(expected names of {', '.join(protocols.KNOWN)})"
        )
    return frozenset(names)


def parse(env: Mapping[str, str]) -> Simulation:
    """The switches in ``env`` (the model cache's env). The settings of a mode are read only when
    a switch is set, so a real download never fails on them; a bad value is
    :class:`SimulationSettingError`."""
    flags = {name: _flag(env, name) for name in MODES}
    if not any(flags.values()):
        return Simulation()
    return Simulation(
        hang=flags[CAUSE_HANG],
        cause_failure=flags[CAUSE_FAILURE],
        simulate=flags[SIMULATE],
        download_duration=_seconds(env, DOWNLOAD_DURATION, 10.0),
        verify_duration=_seconds(env, VERIFY_DURATION, 10.0),
        verify_fail=_flag(env, VERIFY_FAIL),
        simulate_hf=flags[SIMULATE_HF],
        hf_duration=_seconds(env, HF_DURATION, 2.0),
        hf_fail=_protocols(env),
        size=_size(env),
    )


async def simulate(
    sim: Simulation,
    uri: str,
    dest: Path,
    *,
    sequence: tuple[str, ...],
    on_attempt: AttemptCallback | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[Manifest, Attempt]:
    """What ``sim`` asks for, reported as a real download of ``uri`` into ``dest`` through
    ``sequence`` is: the manifest and the attempt that made it, or :class:`SequenceFailed` (a
    plain :class:`DownloadError` for ``AIM_DEBUG_CAUSE_FAILURE``, which fails before any attempt)."""
    if sim.hang:
        await asyncio.Event().wait()  # until cancelled (SIGTERM)
    if sim.cause_failure:
        raise DownloadError(DOWNLOAD_FAILED, f"{CAUSE_FAILURE} is set: failing on purpose (debug simulation)")
    report = _Reporter(on_attempt, on_progress)
    if sim.simulate:
        return await _phases(sim, uri, dest, protocols.attempts(sequence)[0], report)
    return await _hf_sequence(sim, uri, dest, protocols.attempts(sequence), report)


@dataclass(frozen=True)
class _Reporter:
    on_attempt: AttemptCallback | None
    on_progress: ProgressCallback | None

    def attempt(self, attempt: Attempt) -> None:
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    def progress(self, done: int, total: int, phase: str) -> None:
        if self.on_progress is not None:
            finished = 1 if phase in ("verifying", "done") and done >= total else 0
            self.on_progress(Progress(done, total, finished, 1, phase))


async def _phases(
    sim: Simulation, uri: str, dest: Path, attempt: Attempt, report: _Reporter
) -> tuple[Manifest, Attempt]:
    """``AIM_DEBUG_SIMULATE_DOWNLOAD``: download, then verify (or fail verifying), as one attempt."""
    size = sim.size if sim.size is not None else 1024 * 1024
    report.attempt(attempt)
    report.progress(0, 0, "listing")
    await _transfer(dest, size, sim.download_duration, report)
    report.progress(size, size, "verifying")
    await asyncio.sleep(sim.verify_duration)
    if sim.verify_fail:
        written = await asyncio.to_thread(_sha256, dest / DATA_FILE)
        message = (
            f"{DATA_FILE}: sha256 {written} is not what was expected "
            f"({VERIFY_FAIL} is set: the simulated verification fails on purpose)"
        )
        raise SequenceFailed(DownloadError(CHECKSUM_MISMATCH, message), attempt)
    return await _complete(uri, dest, size, report), attempt


async def _hf_sequence(
    sim: Simulation, uri: str, dest: Path, steps: tuple[Attempt, ...], report: _Reporter
) -> tuple[Manifest, Attempt]:
    """``AIM_DEBUG_SIMULATE_HF_DOWNLOAD``: each protocol in turn, the listed ones failing."""
    size = sim.size if sim.size is not None else 100 * 1024
    for attempt in steps:
        report.attempt(attempt)
        report.progress(0, 0, "listing")
        if attempt.protocol in sim.hf_fail:
            report.progress(0, size, "downloading")
            await asyncio.sleep(sim.hf_duration)
            message = (
                f"simulated failure of {attempt.protocol} (attempt {attempt.number}/{len(steps)}; "
                f"{HF_FAIL_PROTOCOLS} names it)"
            )
            if attempt is steps[-1]:
                message += f": all {len(steps)} attempts exhausted"
                raise SequenceFailed(DownloadError(DOWNLOAD_FAILED, message), attempt)
            log.warning("%s; trying %s", message, steps[attempt.number].protocol)
            continue
        await _transfer(dest, size, sim.hf_duration, report)
        report.progress(size, size, "verifying")
        return await _complete(uri, dest, size, report), attempt
    raise AssertionError("a protocol sequence is never empty")


async def _transfer(dest: Path, size: int, duration: float, report: _Reporter) -> None:
    """``size`` zero bytes into ``dest``/:data:`DATA_FILE`, spread over ``duration`` seconds, with
    a ``downloading`` offer at the start and every :data:`TICK`."""
    steps = max(1, math.ceil(duration / TICK))
    path = await asyncio.to_thread(_start_file, dest)
    report.progress(0, size, "downloading")
    written = 0
    for step in range(1, steps + 1):
        await asyncio.sleep(duration / steps)
        target = size * step // steps
        await asyncio.to_thread(_append_zeros, path, target - written)
        written = target
        report.progress(written, size, "downloading")


async def _complete(uri: str, dest: Path, size: int, report: _Reporter) -> Manifest:
    """The manifest of the simulated file, written last as a real download's is."""
    digest = await asyncio.to_thread(_sha256, dest / DATA_FILE)
    done = Manifest(
        source=uri,
        revision=None,
        files=(ManifestFile(DATA_FILE, size, (), (Digest("sha256", digest),)),),
        total_bytes=size,
        verified=(),
        completed_at=time.time(),
    )
    await asyncio.to_thread(manifests.write_manifest, dest, done)
    report.progress(size, size, "done")
    return done


def _start_file(dest: Path) -> Path:
    try:
        dest.mkdir(parents=True, exist_ok=True)
        manifests.remove_manifest(dest)
        path = dest / DATA_FILE
        path.write_bytes(b"")
    except OSError as e:
        raise DownloadError(DOWNLOAD_FAILED, f"cannot write into {dest}: {e.strerror}") from e
    return path


def _append_zeros(path: Path, count: int) -> None:
    chunk = bytes(min(count, 1024 * 1024))
    with path.open("ab") as f:
        while count > 0:
            count -= f.write(chunk[:count])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1024 * 1024), b""):
            h.update(block)
    return h.hexdigest()
