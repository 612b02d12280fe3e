"""The download protocol sequence (``AIM_DOWNLOADER_PROTOCOL``, the released original's contract):
a comma-separated list of protocols tried in order, the next one after a failure that another way
of transferring might not meet. Pure: the download Job runs the sequence (:mod:`.run`), the cache
service reads the same sequence to say which attempt a Job is on (:mod:`.downloadstate`).

What each name means here. This downloader speaks HTTP(S) to every source; its transfer runs one
of two ways, and the names say which:

- ``HF_TRANSFER``: each large file cut into byte ranges fetched over several connections at once
  (what hf_transfer does), resumable range by range. The fast way, and the first by default.
- ``HTTP``: one connection, each file one plain ``GET`` without ``Range``: the most compatible
  (a server, proxy or CDN that mishandles ranges or parallel connections), and the fallback.
- ``XET``: Hugging Face's chunk protocol, which this downloader does not implement: an attempt
  with it fails at once (``ProtocolUnavailable``) and the sequence goes on, so a sequence written
  for the released original (its default is ``XET,HF_TRANSFER``) still downloads.

A switch of protocol starts partly fetched files over (their resume state names the way they were
fetched), as the released original cleans its ``.incomplete`` files between protocols; files
already verified stay. A failure no protocol can fix (the source is not there, the credentials are
refused, the volume is full...) ends the sequence at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aim_cache_jobs.contract import PROTOCOL_ENV
from aim_cache_jobs.downloader.downloadstate import Attempt
from aim_cache_jobs.downloader.errors import (
    INVALID_PROTOCOL,
    PERMANENT_REASONS,
    PROTOCOL_UNAVAILABLE,
    STORAGE_FULL,
    DownloadError,
)

ENV = PROTOCOL_ENV
XET = "XET"
HF_TRANSFER = "HF_TRANSFER"
HTTP = "HTTP"
KNOWN = (XET, HF_TRANSFER, HTTP)
DEFAULT = (HF_TRANSFER, HTTP)
"""When ``AIM_DOWNLOADER_PROTOCOL`` is unset or empty (the released original's default,
``XET,HF_TRANSFER``, would begin every download with an attempt this downloader cannot make)."""
ENDS_THE_SEQUENCE = (PERMANENT_REASONS - {PROTOCOL_UNAVAILABLE}) | {STORAGE_FULL}
"""Failures the next protocol would meet again."""


def parse(text: str | None) -> tuple[str, ...]:
    """The sequence ``text`` names (names in any case, blanks around commas ignored); unset or
    blank: :data:`DEFAULT`. An unknown or empty name is :class:`DownloadError`
    (``InvalidDownloadProtocol``), never guessed at."""
    if text is None or not text.strip():
        return DEFAULT
    names = tuple(name.strip().upper() for name in text.split(","))
    wrong = [name for name in names if name not in KNOWN]
    if wrong or not all(names):
        shown = ", ".join(repr(n) for n in wrong) if wrong else "an empty name"
        raise DownloadError(
            INVALID_PROTOCOL,
            f"{ENV}={text.strip()!r} has {shown}: expected a comma-separated sequence of {', '.join(KNOWN)}",
        )
    return names


def sequence_of(env: Mapping[str, str]) -> tuple[str, ...]:
    """The sequence an environment asks for (:func:`parse` of its ``AIM_DOWNLOADER_PROTOCOL``)."""
    return parse(env.get(ENV))


def attempts(sequence: tuple[str, ...]) -> tuple[Attempt, ...]:
    """One :class:`Attempt` per protocol of ``sequence``, numbered from 1."""
    return tuple(Attempt(protocol, n, sequence) for n, protocol in enumerate(sequence, start=1))


def first_attempt(sequence: tuple[str, ...]) -> Attempt:
    """The attempt a download of ``sequence`` begins with (what it is on until it says otherwise)."""
    return attempts(sequence)[0]


def last_attempt(sequence: tuple[str, ...]) -> Attempt:
    """The attempt a failed download of ``sequence`` ended on when it did not say which."""
    return attempts(sequence)[-1]


@dataclass(frozen=True)
class Transport:
    """How the transfer engine runs for a protocol: over how many connections, and whether files
    are fetched (and resumed) by byte ranges."""

    connections: int
    ranges: bool


def transport(protocol: str, connections: int) -> Transport:
    """How ``protocol`` transfers, with ``connections`` the Job's parallelism;
    ``ProtocolUnavailable`` for ``XET``."""
    if protocol == HF_TRANSFER:
        return Transport(connections, ranges=True)
    if protocol == HTTP:
        return Transport(1, ranges=False)
    raise DownloadError(
        PROTOCOL_UNAVAILABLE, f"{protocol} is not available in this downloader; trying the next protocol"
    )


def goes_on(error: DownloadError) -> bool:
    """Whether the next protocol of the sequence is worth an attempt after ``error``."""
    return error.reason not in ENDS_THE_SEQUENCE
