"""``aim-download SOURCE DEST``: the downloader as a program, for download Jobs.

Human lines go to stderr (never a token, key or signed query string). The last line on stdout is
exactly one JSON object the cache service reads from the pod log:
``{"result": "ok", "files": N, "bytes": N, "revision": ..., "verified": [...], "seconds": S}`` or
``{"result": "error", "reason": "<condition reason>", "message": "..."}``, each with the protocol
attempt it ended on (``"download": {"protocol", "attempt", "protocolSequence"}``) once one began.
Exit codes: 0 success, 1 failure, 2 usage error, 143 stopped by SIGTERM/SIGINT (partial data
kept for the next attempt).

The environment is two things: the Job's settings (:mod:`aim_cache_jobs.downloader.settings`, read
once, when the program starts), and the model cache's own env (the user's: tokens, endpoints),
handed to the sources as it is, and which may name the protocol sequence
(``AIM_DOWNLOADER_PROTOCOL``, :mod:`aim_cache_jobs.downloader.protocols`).

Every connection applies the outbound address policy of ``AIM_OUTBOUND_ALLOWED_HOSTS`` and
``AIM_OUTBOUND_ALLOW_PRIVATE`` (strict when unset; the cache service sets both on the download Jobs
it creates, to its own policy); a refused connection ends with reason ``AddressNotAllowed``. A bad
setting is a usage error naming the variable.

The released original's debug simulation switches (``AIM_DEBUG_SIMULATE_DOWNLOAD``,
``AIM_DEBUG_SIMULATE_HF_DOWNLOAD``, ``AIM_DEBUG_CAUSE_FAILURE``, ``AIM_DEBUG_CAUSE_HANG``...) in the
model cache's env replace the download by a simulation reported as a real one is
(:mod:`aim_cache_jobs.downloader.simulate`); without them nothing changes.

With ``--object GROUP/VERSION/KIND/NAMESPACE/NAME``, ``AIM_NATS_URL`` and ``AIM_PROGRESS_TOKEN`` set,
progress is offered on NATS as the bus role ``download`` (``AIM_NATS_SEED``; at most one offer every
2 s, plus the last), and the cache service relays it as a status report
(:mod:`aimcore.api.bus.progress`); NATS being unreachable never fails the download.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from aim_cache_jobs.contract import (
    DOWNLOAD_COMMAND,
    EXCLUDE_OPTION,
    INCLUDE_OPTION,
    OBJECT_OPTION,
    STALL_TIMEOUT_OPTION,
    UID_OPTION,
    parse_object,
)
from aim_cache_jobs.downloader import protocols, simulate, writepath
from aim_cache_jobs.downloader.downloadstate import Attempt
from aim_cache_jobs.downloader.errors import DOWNLOAD_FAILED, DownloadError, redact_url
from aim_cache_jobs.downloader.filters import DownloadFilter
from aim_cache_jobs.downloader.manifest import Manifest
from aim_cache_jobs.downloader.progress import Progress, RateMeter, summary
from aim_cache_jobs.downloader.sequence import SequenceFailed, download_in_sequence
from aim_cache_jobs.downloader.settings import DownloadJobSettings, load_job
from aimcore.domain.outbound import OutboundPolicy
from aimcore.domain.units import format_bytes, format_duration, format_rate
from aimcore.runtime.settings import SettingsError

if TYPE_CHECKING:
    # aimcore's message models cost ~0.2 s to import: only when progress is published (--object).
    from aimcore.api.bus.messages import ObjectRef, StatusReport
log = logging.getLogger("aim-download")

PUBLISH_INTERVAL = 2.0
LOG_INTERVAL = 10.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TERMINATED = 0, 1, 2, 143
USAGE_ERROR = "UsageError"


def emit_result(result: Mapping[str, Any]) -> None:
    """The final JSON line on stdout."""
    sys.stdout.write(json.dumps(result, separators=(", ", ": ")) + "\n")
    sys.stdout.flush()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        emit_result({"result": "error", "reason": USAGE_ERROR, "message": message})
        sys.exit(EXIT_USAGE)


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=DOWNLOAD_COMMAND,
        description="Download a model (hf://org/model[@rev], s3://bucket/prefix, http(s):// URL or a "
        "local path) into DEST, verified and resumable.",
    )
    parser.add_argument("source")
    parser.add_argument("dest", type=Path)
    parser.add_argument(STALL_TIMEOUT_OPTION, type=_positive_float, default=60.0, metavar="S")
    parser.add_argument("--connections", type=_positive_int, default=8, metavar="N")
    parser.add_argument("--expected-sha256", metavar="HEX")
    parser.add_argument(
        "--write-path",
        choices=["auto", "direct", "buffered"],
        default="auto",
        help="how bytes reach the disk: O_DIRECT, the page cache, or auto (default): whichever a "
        "short write probe into DEST's filesystem finds faster",
    )
    parser.add_argument(
        "--no-direct-io",
        dest="write_path",
        action="store_const",
        const="buffered",
        help="the same as --write-path buffered",
    )
    parser.add_argument(
        INCLUDE_OPTION,
        action="append",
        default=[],
        metavar="GLOB",
        help="download only files whose repository-relative path matches one such pattern "
        "(fnmatch: * also matches /); repeatable",
    )
    parser.add_argument(
        EXCLUDE_OPTION,
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out files whose path matches one such pattern (after --include); repeatable",
    )
    parser.add_argument(OBJECT_OPTION, metavar="GROUP/VERSION/KIND/NAMESPACE/NAME")
    parser.add_argument(UID_OPTION)
    return parser


class Publisher:
    """Offers the latest progress report at most every :data:`PUBLISH_INTERVAL` on the object's
    progress subject, with the Job's token (:mod:`aimcore.api.bus.progress`: the cache service checks it
    and relays the report); failures are logged once and never raised."""

    def __init__(self, nc: Any, subject: str, token: str, obj: ObjectRef, uid: str | None) -> None:
        self.nc, self.subject, self.token, self.obj, self.uid = nc, subject, token, obj, uid
        self.latest: StatusReport | None = None
        self.sent: StatusReport | None = None
        self.published = 0
        self._wake = asyncio.Event()
        self._warned = False
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, job: DownloadJobSettings, obj: ObjectRef, uid: str | None) -> Publisher | None:
        from aimcore.api.bus import progress  # noqa: PLC0415 - only when publishing
        from aimcore.runtime import connect_bus  # noqa: PLC0415

        token = job.progress_token or ""
        try:
            subject = progress.subject(obj)
        except KeyError:
            log.warning("unknown kind %s.%s: progress will not be published", obj.kind, obj.group)
            return None
        if not token:
            log.warning("no AIM_PROGRESS_TOKEN: progress will not be published")
            return None

        async def quiet(*_: Any) -> None:
            return None

        settings = job.bus()
        try:
            # One quick try now (nats-py retries an initial connect forever with unlimited
            # reconnects); once connected, reconnect for as long as the download runs.
            nc = await connect_bus(
                settings,
                "aim-download",
                forever=False,
                on_error=quiet,
                connect_timeout=2,
                max_reconnect_attempts=1,
                reconnect_time_wait=0.5,
                disconnected_cb=quiet,
                reconnected_cb=quiet,
                closed_cb=quiet,
            )
        except Exception as e:
            log.warning("cannot connect to NATS (%s): progress will not be published", type(e).__name__)
            return None
        nc.options["max_reconnect_attempts"] = -1
        publisher = cls(nc, subject, token, obj, uid)
        publisher._task = asyncio.create_task(publisher._loop())
        return publisher

    def offer(self, p: Progress, meter: RateMeter, now: float, attempt: Attempt) -> None:
        from aim_cache_jobs.downloader.report import progress_report  # noqa: PLC0415

        self.latest = progress_report(self.obj, self.uid, p, meter, now=now, attempt=attempt)
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._publish()
            await asyncio.sleep(PUBLISH_INTERVAL)

    async def _publish(self) -> None:
        from aimcore.runtime import offer_progress  # noqa: PLC0415 - only when publishing

        report = self.latest
        if report is None or report is self.sent:
            return
        self.sent = report
        try:
            await offer_progress(self.nc, report, self.token)
            await self.nc.flush(timeout=2)
            self.published += 1
        except Exception as e:
            if not self._warned:
                self._warned = True
                log.warning("cannot publish progress to NATS (%s); continuing without", type(e).__name__)

    async def close(self) -> None:
        """Publish the last report (if not yet sent) and disconnect, within a few seconds."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._publish(), 3)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.nc.close(), 3)


class _Progress:
    """The CLI's progress consumer: a rate meter, a log line every :data:`LOG_INTERVAL` (and at each
    phase change), and the NATS publisher."""

    def __init__(self, publisher: Publisher | None) -> None:
        self.meter = RateMeter()
        self.publisher = publisher
        self.phase: str | None = None
        self.logged_at = 0.0
        self.attempt: Attempt | None = None

    def begin(self, attempt: Attempt) -> None:
        """A protocol attempt starts: its bytes are counted afresh."""
        if attempt.number > 1 or len(attempt.sequence) > 1:
            log.info("attempt %d/%d: %s", attempt.number, len(attempt.sequence), attempt.protocol)
        self.attempt, self.meter, self.phase = attempt, RateMeter(), None

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if p.phase == "downloading":
            self.meter.add(now, p.downloaded_bytes)
        if p.phase != self.phase or now - self.logged_at >= LOG_INTERVAL:
            if p.phase != "done":
                log.info("%s: %s", p.phase, summary(p, self.meter, now=now))
            self.phase, self.logged_at = p.phase, now
        if self.publisher is not None and self.attempt is not None:
            self.publisher.offer(p, self.meter, now, self.attempt)


async def run(
    args: argparse.Namespace,
    env: Mapping[str, str],
    job: DownloadJobSettings,
    policy: OutboundPolicy,
    sim: simulate.Simulation,
) -> tuple[dict[str, Any], int]:
    """Download with the Job's settings ``job`` and ``policy``; ``env`` is the model cache's env
    (the user's), for the sources; ``sim`` the debug switches read from it (usually none)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    stopped: list[str] = []

    def stop(name: str) -> None:
        stopped.append(name)
        task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig.name)
    obj = parse_object(args.object) if args.object else None
    publisher: Publisher | None = None
    started = time.monotonic()
    try:
        if obj is not None and job.nats_url:
            publisher = await Publisher.connect(job, obj, args.uid)
        consumer = _Progress(publisher)
        log.info("downloading %s into %s", _display(args.source), args.dest)
        manifest, attempt = await _download(args, env, policy, consumer, sim)
        result = _succeeded(manifest, attempt, time.monotonic() - started, args.dest)
        code = EXIT_OK
    except DownloadError as e:
        log.error("failed: %s: %s", e.reason, e.message)
        result, code = {"result": "error", "reason": e.reason, "message": e.message}, EXIT_FAILED
        if isinstance(e, SequenceFailed):
            result["download"] = e.attempt.record()
    except asyncio.CancelledError:
        if not stopped:
            raise
        task.uncancel()
        message = f"stopped by {stopped[0]}; partial data kept for the next attempt"
        log.warning("%s", message)
        result, code = {"result": "error", "reason": DOWNLOAD_FAILED, "message": message}, EXIT_TERMINATED
    except Exception as e:  # a bug: still end with the JSON line
        log.exception("unexpected failure")
        message = f"internal error: {type(e).__name__}"
        result, code = {"result": "error", "reason": DOWNLOAD_FAILED, "message": message}, EXIT_FAILED
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        if publisher is not None:
            await publisher.close()
    return result, code


async def _download(
    args: argparse.Namespace,
    env: Mapping[str, str],
    policy: OutboundPolicy,
    consumer: _Progress,
    sim: simulate.Simulation,
) -> tuple[Manifest, Attempt]:
    """The download through its protocol sequence, or what the released original's debug switches
    ask for instead (:mod:`.simulate`: only when one is set; it opens no connection)."""
    sequence = protocols.sequence_of(env)
    if sim.applies_to(args.source):
        log.warning("debug simulation (AIM_DEBUG_*): nothing is downloaded")
        return await simulate.simulate(
            sim, args.source, args.dest, sequence=sequence, on_attempt=consumer.begin, on_progress=consumer
        )
    return await download_in_sequence(
        args.source,
        args.dest,
        sequence=sequence,
        env=env,
        on_attempt=consumer.begin,
        on_progress=consumer,
        stall_timeout=args.stall_timeout,
        connections=args.connections,
        expected_sha256=args.expected_sha256,
        direct_io={"auto": None, "direct": True, "buffered": False}[args.write_path],
        policy=policy,
        keep=DownloadFilter.of(args.include, args.exclude),
    )


def _succeeded(manifest: Manifest, attempt: Attempt, seconds: float, dest: Path) -> dict[str, Any]:
    """The result line of a download that succeeded (logged as it is recorded)."""
    result: dict[str, Any] = {
        "result": "ok",
        "files": len(manifest.files),
        "bytes": manifest.total_bytes,
        "revision": manifest.revision,
        "verified": list(manifest.verified),
        "seconds": round(seconds, 3),
        "download": attempt.record(),
    }
    choice = writepath.chosen(dest)
    if choice is not None:
        result |= choice.describe()
    log.info(
        "done: %d files, %s in %s (%s), verified %s",
        len(manifest.files),
        format_bytes(manifest.total_bytes),
        format_duration(seconds),
        format_rate(manifest.total_bytes / seconds if seconds > 0 else 0.0),
        ", ".join(manifest.verified) or "nothing (the source gives no digests)",
    )
    return result


def _display(source: str) -> str:
    return redact_url(source) if source.lower().startswith(("http://", "https://")) else source


def setup_logging(fmt: str = "text") -> None:
    """Plain lines, or with ``AIM_LOG_FORMAT=json`` (the cache service passes its own) aimcore's
    JSON lines (:mod:`aimcore.runtime.logs`, imported only then: it loads the message models)."""
    if fmt == "json":
        from aimcore.runtime import logs  # noqa: PLC0415 - only for JSON

        logs.configure("WARNING", "json", "aim-download")
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        logging.getLogger().handlers[:] = [handler]
    logging.getLogger().setLevel(logging.WARNING)  # third-party INFO logs may print request URLs
    for name in ("aim-download", "aim_cache_jobs.downloader"):
        logging.getLogger(name).setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    # The process environment is the model cache's env (the user's, not configuration: the sources
    # read their tokens and endpoints from it) plus the Job's settings, read through their classes.
    try:
        start = load_job(env)
    except SettingsError as e:
        build_parser().error(f"invalid setting {e}")
    try:
        sim = simulate.parse(start.environment)
    except simulate.SimulationSettingError as e:
        build_parser().error(f"invalid setting {e}")
    setup_logging(start.job.log_format)
    if args.object:
        try:
            parse_object(args.object)
        except ValueError as e:
            build_parser().error(f"--object: {e}")
    result, code = asyncio.run(run(args, start.environment, start.job, start.policy, sim))
    emit_result(result)
    sys.exit(code)


if __name__ == "__main__":
    main()
