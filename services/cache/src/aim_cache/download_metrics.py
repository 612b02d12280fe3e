"""``aim_download_bytes_total``: the bytes the downloads this replica runs or relays have fetched.

Downloads report their progress as a running total (``downloadedBytes``) per object; the counter
grows by the difference between one report and the one before it of the same object
(:class:`ByteTally`, pure). A total that goes down (a download started over) is a new baseline,
not a negative count. ``via`` says whose download it was: ``job`` (a download Job's progress,
relayed by :mod:`aim_cache.relay`), ``local`` (a download in this process, :mod:`aim_cache.local`)
or ``llmkube`` (an LLMKube Model's fetch, :mod:`aim_cache.llmkube.runs`)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from prometheus_client import Counter

from aimcore.runtime import REGISTRY

DOWNLOAD_BYTES = Counter(
    "aim_download_bytes_total",
    "Bytes fetched by the downloads this replica runs or relays the progress of.",
    ["via"],
    registry=REGISTRY,
)


class ByteTally:
    """The last running total seen per object; :meth:`add` returns what a new total adds."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._last: OrderedDict[str, int] = OrderedDict()

    def add(self, key: str, total: int) -> int:
        before = self._last.pop(key, 0)
        self._last[key] = total
        while len(self._last) > self.LIMIT:
            self._last.popitem(last=False)
        return max(0, total - before)


class DownloadMeter:
    """A :class:`ByteTally` feeding :data:`DOWNLOAD_BYTES` for one ``via``."""

    def __init__(self, via: str) -> None:
        self.tally = ByteTally()
        self.counter = DOWNLOAD_BYTES.labels(via)

    def observe(self, key: str, total: int) -> None:
        if (added := self.tally.add(key, total)) > 0:
            self.counter.inc(added)

    def observe_fields(self, key: str, fields: dict[str, Any]) -> None:
        """From a status report's fields (``progress.downloadedBytes``), when it has them."""
        progress = fields.get("progress")
        total = progress.get("downloadedBytes") if isinstance(progress, dict) else None
        if isinstance(total, int) and not isinstance(total, bool):
            self.observe(key, total)
