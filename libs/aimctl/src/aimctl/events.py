"""``aimctl events`` and ``aimctl describe``: the audit history from the command line
(see ``docs/audit.md``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError

from aim_dev.local.stack import aim_home
from aimcore.api.bus.auth import Credentials
from aimcore.api.kinds import KindRef
from aimcore.runtime.bus import BusSettings, connect_bus
from aimcore.runtime.kube import Kube, connect, describe_error
from aimcore.runtime.settings import ProxySettings
from aimctl.audit import describe as describe_view
from aimctl.audit import render
from aimctl.audit.history import History
from aimctl.audit.query import (
    KindError,
    Query,
    TimeError,
    parse_time,
    parse_types,
    resolve_kind,
)

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
API_TIMEOUT = 20.0

EVENTS_EXAMPLES = """\
examples:
  aimctl events                                  # all history, oldest first
  aimctl events aimsvc -n team-a --since 2h      # AIMServices in team-a, last two hours
  aimctl events aimsvc/qwen3-chat -n team-a -f   # one object, then follow (Ctrl-C stops)
  aimctl events --type decision --source deployer -o json
  aimctl events aimservices.aim.silogen.ai --since 2025-01-02T15:00:00Z --until 2025-01-02T16:00:00Z
"""

DESCRIBE_EXAMPLES = """\
examples:
  aimctl describe aimsvc/qwen3-chat -n team-a
  aimctl describe aimclustermodel qwen3-32b
  aimctl describe aimmodel/llama -n team-a -o json
"""


class UsageError(Exception):
    """A bad argument; reported on stderr with exit code 2."""


# ---------------------------------------------------------------------------------------------
# Where the servers are
# ---------------------------------------------------------------------------------------------


def nats_url(explicit: str | None) -> str:
    """``--nats``, else ``AIM_NATS_URL``, else the URL ``aimctl up`` recorded, else the default."""
    if explicit:
        return explicit
    if os.environ.get("AIM_NATS_URL"):
        return os.environ["AIM_NATS_URL"]
    state = aim_home() / "state.json"
    with contextlib.suppress(OSError, ValueError, AttributeError):
        url = json.loads(state.read_text()).get("nats_url")
        if isinstance(url, str) and url:
            return url
    return DEFAULT_NATS_URL


def kubeconfig_path(explicit: str | None) -> str:
    """``--kubeconfig``, else ``AIM_KUBECONFIG``, else (the first file of) ``KUBECONFIG``, else
    the kubeconfig ``aimctl up`` wrote."""
    if explicit:
        return explicit
    if os.environ.get("AIM_KUBECONFIG"):
        return os.environ["AIM_KUBECONFIG"]
    if os.environ.get("KUBECONFIG"):
        return next((p for p in os.environ["KUBECONFIG"].split(os.pathsep) if p), "")
    return str(aim_home() / "kubeconfig")


def bus_settings(url: str) -> BusSettings:
    """How ``aimctl`` reaches the bus at ``url``: as the ``reader`` role (``AIM_NATS_ROLE`` to
    change), with ``AIM_NATS_SEED_FILE`` / ``AIM_NATS_SEED``, else the reader key ``aimctl up``
    generated in ``$AIM_HOME/nats/creds``; over TLS trusting ``AIM_NATS_TLS_CA_FILE``, else the bus
    CA ``aimctl up --node --nodes N`` kept in ``$AIM_HOME/nats/ca.crt``."""
    settings = BusSettings().replace(url=url).as_role("reader")
    if not settings.seed_file and not settings.seed:
        local = Credentials(aim_home() / "nats" / "creds").seed_file(settings.role or "reader")
        if local.exists():
            settings = settings.replace(seed_file=str(local))
    ca = aim_home() / "nats" / "ca.crt"
    if not settings.tls_ca_file and ca.exists():
        settings = settings.replace(tls_ca_file=str(ca))
    return settings


async def connect_nats(url: str) -> NatsClient:
    async def quiet(*_: Any) -> None:
        return None

    try:
        return await connect_bus(
            bus_settings(url), "aimctl", forever=False, on_error=quiet, connect_timeout=5
        )
    except Exception as exc:
        raise ConnectionError(f"cannot connect to NATS at {url}: {exc}") from None


def output_width(explicit: int | None, stream: TextIO) -> int | None:
    """``--width`` (0: no limit), else the terminal's width, else ``COLUMNS``, else no limit."""
    if explicit is not None:
        return explicit or None
    if stream.isatty():
        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


# ---------------------------------------------------------------------------------------------
# Targets: KIND, KIND/NAME or KIND NAME
# ---------------------------------------------------------------------------------------------


def parse_target(target: str | None, name: str | None = None) -> tuple[KindRef | None, str | None]:
    if not target:
        return None, name
    kind_text, slash, target_name = target.partition("/")
    if slash and not target_name:
        raise UsageError(f"missing name in {target!r}")
    if target_name and name and target_name != name:
        raise UsageError(f"two names given: {target_name!r} and {name!r}")
    try:
        ref = resolve_kind(kind_text)
    except KindError as exc:
        raise UsageError(str(exc)) from None
    return ref, target_name or name


def _time(value: str | None, flag: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except TimeError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def build_query(args: argparse.Namespace) -> Query:
    ref, name = parse_target(args.target, args.name)
    if args.all_namespaces and args.namespace:
        raise UsageError("--namespace and --all-namespaces exclude each other")
    if args.follow and args.until:
        raise UsageError("--follow and --until exclude each other")
    for flag in ("tail", "limit"):
        value = getattr(args, flag)
        if value is not None and value < 0:
            raise UsageError(f"--{flag} must not be negative")
    try:
        return Query(
            kind=ref,
            namespace=args.namespace or None,
            name=name,
            since=_time(args.since, "--since"),
            until=_time(args.until, "--until"),
            types=parse_types(args.type),
            source=args.source or None,
            follow=args.follow,
            tail=args.tail,
            limit=args.limit,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------------------------


async def run_events(
    query: Query, *, url: str, output: str, width: int | None, out: TextIO, err: TextIO
) -> int:
    nc = await connect_nats(url)
    printed_header = False
    reported = False

    def header() -> None:
        nonlocal printed_header
        if output == "table" and not printed_header:
            printed_header = True
            out.write(render.table_header(width) + "\n")
            out.flush()

    def end_of_history(history: History) -> None:
        nonlocal reported
        if reported:
            return
        reported = True
        for stream in history.missing:
            err.write(f"warning: stream {stream} does not exist yet (is the watcher running?)\n")
        if query.follow:
            header()
            err.write("-- end of history; following new records (Ctrl-C to stop) --\n")
        elif history.count == 0:
            err.write("No records found.\n")
        err.flush()

    try:
        async with History(nc.jetstream(), query) as history:

            async def notify() -> None:
                await history.caught_up.wait()
                end_of_history(history)

            notifier = asyncio.create_task(notify())
            try:
                async for record in history.records():
                    header()
                    line = render.json_line(record) if output == "json" else render.table_row(record, width)
                    out.write(line + "\n")
                    if history.caught_up.is_set():
                        out.flush()
                out.flush()
                if history.caught_up.is_set():
                    end_of_history(history)
            finally:
                notifier.cancel()
    finally:
        await nc.close()
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    try:
        query = build_query(args)
    except UsageError as exc:
        print(f"aimctl events: {exc}", file=sys.stderr)
        return 2
    width = output_width(args.width, sys.stdout) if args.output == "table" else None
    return _run(
        run_events(
            query, url=nats_url(args.nats), output=args.output, width=width, out=sys.stdout, err=sys.stderr
        )
    )


# ---------------------------------------------------------------------------------------------
# describe
# ---------------------------------------------------------------------------------------------


async def _read_object(
    kubeconfig: str, ref: KindRef, namespace: str | None, name: str
) -> dict[str, Any] | None:
    kube = Kube(await connect(kubeconfig, ProxySettings()), field_manager="aimctl")
    try:
        return await kube.get(ref, namespace, name)
    finally:
        await kube.close()


async def run_describe(
    ref: KindRef,
    namespace: str | None,
    name: str,
    *,
    url: str,
    kubeconfig: str | None,
    limit: int,
    output: str,
    width: int | None,
    out: TextIO,
) -> int:
    obj: dict[str, Any] | None = None
    api_error: str | None = None
    if kubeconfig is None:
        api_error = "no kubeconfig (use --kubeconfig)"
    else:
        try:
            async with asyncio.timeout(API_TIMEOUT):
                obj = await _read_object(kubeconfig, ref, namespace, name)
        except TimeoutError:
            api_error = f"no answer within {API_TIMEOUT:.0f}s"
        except Exception as exc:
            api_error = describe_error(exc)
    nc = await connect_nats(url)
    try:
        history = await describe_view.object_history(nc.jetstream(), ref, namespace, name, limit=limit)
    finally:
        await nc.close()
    if output == "json":
        view = describe_view.render_json(ref, namespace, name, obj, history, api_error=api_error)
        out.write(json.dumps(view, ensure_ascii=False, indent=2) + "\n")
    else:
        out.write(
            describe_view.render_text(ref, namespace, name, obj, history, api_error=api_error, width=width)
        )
    out.flush()
    return 1 if obj is None and history.empty() else 0


def cmd_describe(args: argparse.Namespace) -> int:
    try:
        if args.positional_name and "/" in args.target:
            raise UsageError("give either KIND/NAME or KIND NAME, not both")
        if args.positional_name and args.name and args.positional_name != args.name:
            raise UsageError(f"two names given: {args.positional_name!r} and {args.name!r}")
        if args.history < 1:
            raise UsageError("--history must be at least 1")
        ref, name = parse_target(args.target, args.positional_name or args.name)
        if ref is None or not name:
            raise UsageError("give KIND/NAME (or KIND NAME), e.g. aimsvc/qwen3-chat")
    except UsageError as exc:
        print(f"aimctl describe: {exc}", file=sys.stderr)
        return 2
    namespace = (args.namespace or "default") if ref.namespaced else None
    width = output_width(args.width, sys.stdout) if args.output == "table" else None
    kubeconfig = kubeconfig_path(args.kubeconfig)
    if not Path(kubeconfig).is_file():
        print(
            f"aimctl describe: warning: no kubeconfig at {kubeconfig}; showing history only", file=sys.stderr
        )
    return _run(
        run_describe(
            ref,
            namespace,
            name,
            url=nats_url(args.nats),
            kubeconfig=kubeconfig if Path(kubeconfig).is_file() else None,
            limit=args.history,
            output=args.output,
            width=width,
            out=sys.stdout,
        )
    )


# ---------------------------------------------------------------------------------------------


def _run(coro: Any) -> int:
    """Run a command: Ctrl-C ends it quietly (130), a closed pipe (``| head``) silently (0)."""
    try:
        result: int = asyncio.run(coro)
        return result
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except ConnectionError as exc:
        print(f"aimctl: {exc}", file=sys.stderr)
        return 2
    except NatsError as exc:
        print(f"aimctl: NATS error: {exc!r}", file=sys.stderr)
        return 1


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namespace", help="namespace of the objects")
    p.add_argument("--name", help="object name (instead of KIND/NAME)")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table", help="output format")
    p.add_argument("--width", type=int, help="cut lines to this width (0: never); default: the terminal's")
    p.add_argument("--nats", help="NATS URL (default: $AIM_NATS_URL, else the one `aimctl up` started)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``events`` and ``describe`` to aimctl's subcommands."""
    events = sub.add_parser(
        "events",
        help="replay the audit history (change events, status reports, decisions), optionally follow it",
        description="Replay the audit history in time order: change events from the watcher, status "
        "reports and decisions from the services. Filters are applied by the NATS server.",
        epilog=EVENTS_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    events.add_argument("target", nargs="?", help="KIND or KIND/NAME (aimsvc, aimsvc/qwen3-chat, ...)")
    _common(events)
    events.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (the default)")
    events.add_argument("--since", help="start: a duration back (10m, 2h, 1d) or an RFC 3339 time")
    events.add_argument("--until", help="end (inclusive): a duration back or an RFC 3339 time")
    events.add_argument("-f", "--follow", action="store_true", help="after the history, print new records")
    events.add_argument(
        "--type",
        action="append",
        default=[],
        help="record types: change, status, decision (comma-separated or repeated; default: all)",
    )
    events.add_argument("--source", help="only records from this service (watcher, status, deployer, ...)")
    events.add_argument("--tail", type=int, help="only the last N records of the history")
    events.add_argument("--limit", type=int, help="stop after N records")
    events.set_defaults(func=cmd_events)

    describe = sub.add_parser(
        "describe",
        help="an object's conditions, condition history, decisions and change events",
        description="Show an object's current conditions (from the API server) with its condition "
        "history, the services' recent decisions and its recent change events (from NATS).",
        epilog=DESCRIBE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    describe.add_argument("target", help="KIND/NAME, or KIND followed by NAME")
    describe.add_argument("positional_name", nargs="?", metavar="NAME", help="NAME, when not in the target")
    _common(describe)
    describe.add_argument(
        "--kubeconfig", help="kubeconfig (default: $AIM_KUBECONFIG, $KUBECONFIG, $AIM_HOME)"
    )
    describe.add_argument("--history", type=int, default=20, help="entries per history section (default 20)")
    describe.set_defaults(func=cmd_describe)
