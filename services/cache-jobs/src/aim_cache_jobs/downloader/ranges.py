"""Byte-range bookkeeping for partial files, pure and thread-agnostic: which ranges of a file are on
disk, which are missing, the contiguous prefix a hashing thread may read, and how missing bytes are
cut into requests. Callers hold their own locks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

Range = tuple[int, int]  # [start, end)


class RangeSet:
    """Sorted, merged, non-overlapping half-open ranges ``[start, end)``."""

    def __init__(self, ranges: Iterable[Range] = ()) -> None:
        self._ranges: list[list[int]] = []
        for start, end in ranges:
            self.add(start, end)

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        merged: list[list[int]] = []
        placed = False
        for r in self._ranges:
            if r[1] < start:
                merged.append(r)
            elif end < r[0]:
                if not placed:
                    merged.append([start, end])
                    placed = True
                merged.append(r)
            else:
                start, end = min(start, r[0]), max(end, r[1])
        if not placed:
            merged.append([start, end])
        self._ranges = merged

    def ranges(self) -> list[Range]:
        return [(r[0], r[1]) for r in self._ranges]

    def total(self) -> int:
        return sum(r[1] - r[0] for r in self._ranges)

    def prefix(self) -> int:
        """End of the contiguous range that starts at 0 (0 if byte 0 is missing)."""
        return self._ranges[0][1] if self._ranges and self._ranges[0][0] == 0 else 0

    def covers(self, start: int, end: int) -> bool:
        return any(r[0] <= start and end <= r[1] for r in self._ranges)

    def missing(self, size: int) -> list[Range]:
        """The gaps in ``[0, size)``."""
        gaps: list[Range] = []
        pos = 0
        for start, end in self._ranges:
            if start >= size:
                break
            if start > pos:
                gaps.append((pos, start))
            pos = max(pos, end)
        if pos < size:
            gaps.append((pos, size))
        return gaps

    def clipped(self, size: int) -> RangeSet:
        """The ranges inside ``[0, size)`` (a state file may not claim bytes past the end)."""
        return RangeSet((s, min(e, size)) for s, e in self.ranges() if s < size)

    def __repr__(self) -> str:
        return f"RangeSet({self.ranges()!r})"


def split(gaps: Iterable[Range], chunk: int) -> Iterator[Range]:
    """Cut ``gaps`` into requests of at most ``chunk`` bytes, in file order."""
    if chunk <= 0:
        raise ValueError("chunk must be positive")
    for start, end in gaps:
        pos = start
        while pos < end:
            stop = min(end, pos + chunk)
            # Avoid a tiny last request: fold a remainder under a quarter chunk into this one.
            if end - stop < chunk // 4:
                stop = end
            yield (pos, stop)
            pos = stop
