"""The bus topology table of docs/backbone.md (every stream and KV bucket the watcher declares, with
what each keeps and for how long), generated from :mod:`aimcore.api.bus.topology` so the page
cannot drift from what the bus holds: ``aimctl bus topology`` rewrites the table between its
markers, ``--check`` (and tests/unit/cli/test_topology_docs.py) fails when it is stale."""

from __future__ import annotations

from pathlib import Path

from aimcore.api.bus import topology

PAGE = Path("docs") / "backbone.md"
BEGIN = (
    "<!-- bus:topology begin: generated from aimcore.api.bus.topology by `aimctl bus topology`; "
    "do not edit by hand -->"
)
END = "<!-- bus:topology end -->"


def _duration(seconds: float | None) -> str:
    if not seconds:
        return "none"
    if seconds % topology.DAY == 0:
        days = int(seconds // topology.DAY)
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{seconds:g} s"


def table() -> str:
    rows = [
        "| name | kind | holds | kept |",
        "| --- | --- | --- | --- |",
    ]
    for s in topology.stream_configs():
        subjects = ", ".join(f"`{subject}`" for subject in s.subjects or [])
        size = (s.max_bytes or 0) // topology.GIB
        kept = f"{_duration(s.max_age)}, at most {size} GiB (the oldest go first)"
        rows.append(f"| `{s.name}` | stream | {s.description}: {subjects} | {kept} |")
    for kv in topology.bucket_configs():
        kept = (
            f"latest value per key; a key expires {_duration(kv.ttl)} after its last write"
            if kv.ttl
            else ("latest value per key")
        )
        rows.append(f"| `{kv.bucket}` | KV bucket | {kv.description} | {kept} |")
    return "\n".join(rows)


def render(page: str) -> str:
    if BEGIN not in page or END not in page:
        raise ValueError(f"{PAGE} lacks the topology table's markers: {BEGIN} ... {END}")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def stale(page: Path = PAGE) -> bool:
    text = page.read_text()
    return render(text) != text


def write(page: Path = PAGE) -> None:
    page.write_text(render(page.read_text()))
