"""``docs/settings.md``, generated from the settings classes (``aimctl settings docs``): every variable
the operator's processes read, with its concern, the processes that read it, its accepted form, its
default and its description. ``--check`` (and a unit test) fails when the committed page differs, as
the CRD drift check does for ``deploy/crds``.

Who reads what comes from the same declarations the processes validate at start-up: the concerns
every service reads (:data:`aimcore.runtime.settings.COMMON`), each service's ``SETTINGS`` (in its
``settings`` module) and the download Job's (:mod:`aim_cache_jobs.downloader.settings`)."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterable
from pathlib import Path

from aim_dev.local.consuming import SERVICES
from aim_dev.local.stack import service_module
from aimcore.runtime.settings import COMMON, AimSettings, SettingsError, Variable

PAGE = Path("docs/settings.md")
EVERY_SERVICE = "every service"
DOWNLOAD_JOBS = "download Jobs (`aim-download`)"


def _declared(module: str) -> tuple[type[AimSettings], ...]:
    concerns: tuple[type[AimSettings], ...] = importlib.import_module(module).SETTINGS
    return concerns


def readers() -> dict[type[AimSettings], list[str]]:
    """Each concern, in the page's order, and who reads it."""
    found: dict[type[AimSettings], list[str]] = {concern: [EVERY_SERVICE] for concern in COMMON}
    sources = [(name, f"{service_module(name)}.settings") for name in SERVICES]
    sources.append((DOWNLOAD_JOBS, "aim_cache_jobs.downloader.settings"))
    for reader, module in sources:
        for concern in _declared(module):
            names = found.setdefault(concern, [])
            if EVERY_SERVICE not in names and reader not in names:
                names.append(reader)
    return found


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _paragraph(concern: type[AimSettings]) -> str:
    return " ".join(inspect.cleandoc(concern.__doc__ or "").split())


def _example() -> str:
    """A real start-up error, as the status service prints it."""
    status: type[AimSettings] = importlib.import_module("aim_status.settings").StatusSettings
    try:
        status.from_env({"AIM_STATUS_COALESCE_SECONDS": "abc"})
    except SettingsError as exc:
        return f"aim-status: invalid setting {exc}"
    raise AssertionError("AIM_STATUS_COALESCE_SECONDS=abc was accepted")


def render() -> str:
    concerns = readers()
    lines = [
        "# Settings reference",
        "",
        "<!-- Generated from the settings classes by `aimctl settings docs`; do not edit by hand "
        "(`aimctl settings docs --check` fails when this page is stale). -->",
        "",
        "The operator's processes are configured by environment variables, read through one settings "
        "class per concern (`aimcore.runtime.settings`, and each service's `settings` module). A "
        "service reads and validates every one of them when it starts, before it connects to "
        "anything: a bad value stops it with exit code 2 and one line naming the variable, the "
        "problem and the accepted form, e.g.",
        "",
        "```",
        _example(),
        "```",
        "",
        "An empty value counts as unset (the default applies) unless a variable says otherwise. In a "
        "cluster the Deployments in `deploy/base/services.yaml` set them ([deploy.md](deploy.md)); "
        "`aimctl up` sets them for the embedded stack.",
        "",
        "## Index",
        "",
        "| variable | concern | read by |",
        "| --- | --- | --- |",
    ]
    index = sorted(
        ((name, concern) for concern in concerns for v in concern.variables() for name in v.names),
        key=lambda item: (item[0].upper(), item[0], item[1].title),
    )
    for name, concern in index:
        link = f"[{concern.title}](#{_slug(concern.title)})"
        lines.append(f"| `{name}` | {link} | {', '.join(concerns[concern])} |")
    for concern, reader in concerns.items():
        lines += [
            "",
            f"## {concern.title}",
            "",
            _paragraph(concern),
            "",
            f"Read by: {', '.join(reader)}. Class: `{concern.__module__}.{concern.__qualname__}`.",
            "",
            "| variable | accepted | default | description |",
            "| --- | --- | --- | --- |",
        ]
        lines += [_row(v) for v in concern.variables()]
    lines += [
        "",
        "## Not settings",
        "",
        "- OpenTelemetry's exporters read their own variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, "
        "`OTEL_EXPORTER_OTLP_HEADERS`...), and aiohttp `NO_PROXY` when a proxy is set.",
        "- A model cache's `env` (`HF_TOKEN`, `AWS_ACCESS_KEY_ID`, `HF_ENDPOINT`...) is the user's, "
        "handed to the downloader's sources as it is ([caching.md](caching.md)); it cannot change "
        "the outbound address policy.",
        "- The operator sets `AIM_*` variables inside the model containers it deploys (`AIM_MODEL_ID`, "
        "`AIM_GPU_MODEL`, `AIM_PRECISION`, `AIM_PROFILE_ID`, `AIM_METRIC`, `AIM_ENGINE_ARGS`, "
        "`AIM_CACHE_PATH`...): those configure the inference engine, not the operator "
        "([services.md](services.md)). `AIM_EVENTS`, `AIM_STATUS` and `AIM_DECISIONS` are stream "
        "names.",
        "",
    ]
    return "\n".join(lines)


def _row(v: Variable) -> str:
    return f"| {_code(v.names)} | {_cell(v.form)} | {_cell(v.default)} | {_cell(v.description)} |"


def write(path: Path = PAGE) -> None:
    path.write_text(render())


def stale(path: Path = PAGE) -> bool:
    """Whether the page at ``path`` differs from what the settings classes say."""
    try:
        return path.read_text() != render()
    except FileNotFoundError:
        return True
