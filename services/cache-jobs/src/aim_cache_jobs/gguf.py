"""GGUF header reading for LLMKube's ``Model.status.gguf``.

LLMKube reports a model's architecture, context length, quantization and friends from the GGUF file
header, without downloading the weights. This module parses that header (magic, version, counts and
every metadata key/value; never tensor data) from any ``ReadAt`` callable, so the one parser serves
local files and remote ones: fetched in blocks with HTTP range requests, or, when the server ignores
ranges, from a streamed body that is closed as soon as the header has been read.

Parsing is pure (``parse_header`` / ``status_fields``); I/O lives in ``read_local`` / ``read_remote``.
Every size read from the file is checked against a guard before it is trusted, so a hostile or
corrupt file yields ``GGUFError`` rather than a huge allocation or an endless read.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import struct
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aimcore.api.errors import AimError
from aimcore.domain.outbound import STRICT, OutboundPolicy
from aimcore.domain.outbound.connect import http_connection

__all__ = [
    "DEFAULT_BLOCK",
    "FILE_TYPE_NAMES",
    "GGUFArray",
    "GGUFError",
    "GGUFHeader",
    "ReadAt",
    "parse_header",
    "quantization_name",
    "read_local",
    "read_remote",
    "status_fields",
]

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)

# Guards against corrupt or hostile headers.
MAX_STRING_BYTES = 16 << 20
MAX_ARRAY_COUNT = 100_000_000
MAX_KV_COUNT = 1_000_000
MAX_TENSOR_COUNT = 10_000_000
MAX_ARRAY_DEPTH = 8
# Real headers (tokenizer vocabularies, merges, scores) are tens of MiB at most.
MAX_HEADER_BYTES = 256 << 20

KEEP_ARRAY_ELEMENTS = 64
DEFAULT_BLOCK = 1 << 20
MAX_REDIRECTS = 10

ReadAt = Callable[[int, int], bytes]
"""``(offset, size) -> bytes``; may return fewer bytes than asked (nothing at all at end of file)."""

# llama.cpp's LLAMA_FTYPE values (gguf-py's ``LlamaFileType``), named the way LLMKube reports them.
FILE_TYPE_NAMES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
    39: "NVFP4",
    40: "Q1_0",
}

# GGUF value type ids.
_STRING = 8
_ARRAY = 9
_SCALARS: dict[int, struct.Struct] = {
    0: struct.Struct("<B"),  # uint8
    1: struct.Struct("<b"),  # int8
    2: struct.Struct("<H"),  # uint16
    3: struct.Struct("<h"),  # int16
    4: struct.Struct("<I"),  # uint32
    5: struct.Struct("<i"),  # int32
    6: struct.Struct("<f"),  # float32
    7: struct.Struct("<?"),  # bool
    10: struct.Struct("<Q"),  # uint64
    11: struct.Struct("<q"),  # int64
    12: struct.Struct("<d"),  # float64
}
_U32 = _SCALARS[4]
_U64 = _SCALARS[10]
_TYPE_AND_COUNT = struct.Struct("<IQ")
_COUNTS = struct.Struct("<QQ")


class GGUFError(AimError, ValueError):
    """Not a GGUF file, an unsupported version, a truncated or absurd header, or a failed fetch.
    Never reported: the header is best-effort metadata (no reason of its own).

    ``status`` is the HTTP status when a remote read failed on one (401, 403, 404, ...)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GGUFArray(list[Any]):
    """An array value: its first ``KEEP_ARRAY_ELEMENTS`` elements, the full ``length`` and the GGUF
    ``element_type`` id. Compares equal to a plain list of the kept elements."""

    def __init__(self, items: Iterable[Any], *, length: int, element_type: int) -> None:
        super().__init__(items)
        self.length = length
        self.element_type = element_type


@dataclass(frozen=True)
class GGUFHeader:
    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(hash=False)


class _Cursor:
    """Sequential reader over a ``ReadAt`` that fetches ``block``-sized chunks, so a header with
    hundreds of thousands of values costs a handful of reads, not one per value."""

    __slots__ = ("_block", "_buf", "_pos", "_read", "_start")

    def __init__(self, read: ReadAt, block: int) -> None:
        self._read = read
        self._block = block
        self._buf = b""
        self._start = 0  # file offset of _buf[0]
        self._pos = 0  # index of the current position in _buf

    @property
    def offset(self) -> int:
        return self._start + self._pos

    def _check_bound(self, end: int) -> None:
        if end > MAX_HEADER_BYTES:
            raise GGUFError(
                f"GGUF header larger than {MAX_HEADER_BYTES} bytes (needs offset {end}); refusing to read on"
            )

    def _fill(self, need: int) -> None:
        start = self._start + self._pos
        self._check_bound(start + need)
        buf = self._buf[self._pos :]
        while len(buf) < need:
            at = start + len(buf)
            chunk = self._read(at, max(self._block, need - len(buf)))
            if not chunk:
                raise GGUFError(
                    f"truncated GGUF header: needed {need} bytes at offset {start}, data ends at {at}"
                )
            buf += chunk
        self._buf, self._start, self._pos = buf, start, 0

    def take(self, n: int) -> bytes:
        if len(self._buf) - self._pos < n:
            self._fill(n)
        p = self._pos
        self._pos = p + n
        return self._buf[p : p + n]

    def unpack(self, st: struct.Struct) -> tuple[Any, ...]:
        if len(self._buf) - self._pos < st.size:
            self._fill(st.size)
        values = st.unpack_from(self._buf, self._pos)
        self._pos += st.size
        return values

    def skip(self, n: int) -> None:
        if len(self._buf) - self._pos >= n:
            self._pos += n
            return
        target = self._start + self._pos + n
        self._check_bound(target)
        self._buf, self._start, self._pos = b"", target, 0

    def skip_strings(self, count: int, key: str) -> None:
        """Skip ``count`` length-prefixed strings without decoding them (tokenizer vocabularies)."""
        unpack_from = _U64.unpack_from
        buf, pos = self._buf, self._pos
        for _ in range(count):
            if len(buf) - pos < 8:
                self._pos = pos
                self._fill(8)
                buf, pos = self._buf, self._pos
            (n,) = unpack_from(buf, pos)
            if n > MAX_STRING_BYTES:
                raise GGUFError(_string_too_long(key, n))
            end = pos + 8 + n
            if end <= len(buf):
                pos = end
            else:
                self._pos = pos + 8
                self.skip(n)
                buf, pos = self._buf, self._pos
        self._pos = pos

    def confirm_end(self) -> None:
        """After a skip past the buffer, prove the skipped bytes exist (catches a header cut short
        inside a trailing array)."""
        if not self._buf and self._start > 0 and not self._read(self._start - 1, 1):
            raise GGUFError(f"truncated GGUF header: data ends before offset {self._start}")


def _string_too_long(key: str, n: int) -> str:
    return f"GGUF string of {n} bytes in {key!r} exceeds the {MAX_STRING_BYTES}-byte limit"


def _read_string(cur: _Cursor, key: str) -> str:
    (n,) = cur.unpack(_U64)
    if n > MAX_STRING_BYTES:
        raise GGUFError(_string_too_long(key, n))
    return cur.take(n).decode("utf-8", errors="replace")


def _check_type(vtype: int, key: str) -> None:
    if vtype not in _SCALARS and vtype not in (_STRING, _ARRAY):
        raise GGUFError(f"unknown GGUF value type {vtype} for {key!r}")


def _read_array_head(cur: _Cursor, key: str, depth: int) -> tuple[int, int]:
    if depth >= MAX_ARRAY_DEPTH:
        raise GGUFError(f"GGUF arrays nested deeper than {MAX_ARRAY_DEPTH} in {key!r}")
    etype, count = cur.unpack(_TYPE_AND_COUNT)
    _check_type(etype, key)
    if count > MAX_ARRAY_COUNT:
        raise GGUFError(f"GGUF array of {count} elements in {key!r} exceeds the {MAX_ARRAY_COUNT} limit")
    return etype, count


def _read_value(cur: _Cursor, vtype: int, key: str, depth: int = 0) -> Any:
    st = _SCALARS.get(vtype)
    if st is not None:
        return cur.unpack(st)[0]
    if vtype == _STRING:
        return _read_string(cur, key)
    if vtype == _ARRAY:
        etype, count = _read_array_head(cur, key, depth)
        keep = min(count, KEEP_ARRAY_ELEMENTS)
        items = [_read_value(cur, etype, key, depth + 1) for _ in range(keep)]
        if count > keep:
            _skip_values(cur, etype, count - keep, key, depth + 1)
        return GGUFArray(items, length=count, element_type=etype)
    raise GGUFError(f"unknown GGUF value type {vtype} for {key!r}")


def _skip_values(cur: _Cursor, vtype: int, count: int, key: str, depth: int) -> None:
    st = _SCALARS.get(vtype)
    if st is not None:
        cur.skip(st.size * count)
    elif vtype == _STRING:
        cur.skip_strings(count, key)
    else:  # nested arrays: every element carries its own type and count
        for _ in range(count):
            etype, n = _read_array_head(cur, key, depth)
            _skip_values(cur, etype, n, key, depth + 1)


def parse_header(read: ReadAt, *, block: int = DEFAULT_BLOCK) -> GGUFHeader:
    """Parse a little-endian GGUF v2/v3 header: magic, version, tensor count and every metadata
    key/value. Array values keep their first ``KEEP_ARRAY_ELEMENTS`` elements (``GGUFArray``).
    Tensor infos and tensor data are never read. ``read`` is called with ``block``-sized requests."""
    if block <= 0:
        raise ValueError("block must be positive")
    cur = _Cursor(read, block)
    try:
        magic = cur.take(4)
    except GGUFError:
        raise GGUFError("not a GGUF file: shorter than the 4-byte magic") from None
    if magic != MAGIC:
        raise GGUFError(f"not a GGUF file: magic {magic!r}, expected {MAGIC!r}")
    (version,) = cur.unpack(_U32)
    if version not in SUPPORTED_VERSIONS:
        if int.from_bytes(version.to_bytes(4, "little"), "big") in SUPPORTED_VERSIONS:
            raise GGUFError("big-endian GGUF files are not supported")
        raise GGUFError(f"unsupported GGUF version {version} (supported: 2, 3)")
    tensor_count, kv_count = cur.unpack(_COUNTS)
    if tensor_count > MAX_TENSOR_COUNT:
        raise GGUFError(f"GGUF tensor count {tensor_count} exceeds the {MAX_TENSOR_COUNT} limit")
    if kv_count > MAX_KV_COUNT:
        raise GGUFError(f"GGUF metadata count {kv_count} exceeds the {MAX_KV_COUNT} limit")
    metadata: dict[str, Any] = {}
    for index in range(kv_count):
        key = _read_string(cur, f"<key #{index}>")
        (vtype,) = cur.unpack(_U32)
        value = _read_value(cur, vtype, key)
        if key in metadata:
            raise GGUFError(f"duplicate GGUF metadata key {key!r}")
        metadata[key] = value
    cur.confirm_end()
    return GGUFHeader(version=version, tensor_count=tensor_count, metadata=metadata)


def quantization_name(file_type: int) -> str:
    """llama.cpp's name for a ``general.file_type`` value (``FTYPE_<n>`` when unknown)."""
    return FILE_TYPE_NAMES.get(file_type, f"FTYPE_{file_type}")


def _as_str(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def status_fields(header: GGUFHeader) -> dict[str, Any]:
    """``status.gguf`` in wire form (camelCase keys); keys whose value is absent are omitted."""
    md = header.metadata
    arch = _as_str(md.get("general.architecture"))
    file_type = _as_int(md.get("general.file_type"))
    candidates: dict[str, Any] = {
        "architecture": arch,
        "modelName": _as_str(md.get("general.name")),
        "quantization": None if file_type is None else quantization_name(file_type),
        "contextLength": _as_int(md.get(f"{arch}.context_length")) if arch else None,
        "embeddingSize": _as_int(md.get(f"{arch}.embedding_length")) if arch else None,
        "layerCount": _as_int(md.get(f"{arch}.block_count")) if arch else None,
        "headCount": _as_int(md.get(f"{arch}.attention.head_count")) if arch else None,
        "license": _as_str(md.get("general.license")),
        "tensorCount": header.tensor_count,
        "fileVersion": header.version,
    }
    return {k: v for k, v in candidates.items() if v is not None}


def read_local(path: str | os.PathLike[str], *, block: int = DEFAULT_BLOCK) -> GGUFHeader:
    """Parse the GGUF header of a local file (OS errors become ``GGUFError``)."""
    try:
        with open(path, "rb") as f:

            def read_at(offset: int, size: int) -> bytes:
                f.seek(offset)
                return f.read(size)

            return parse_header(read_at, block=block)
    except OSError as exc:
        raise GGUFError(f"cannot read {os.fspath(path)!s}: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------------------------------------------
# Remote files


_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_SENSITIVE = frozenset({"authorization", "proxy-authorization", "cookie"})
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)
_STREAM_DISCARD = 1 << 20


def _origin(parts: urllib.parse.SplitResult) -> tuple[str, str, int]:
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _safe(url: str) -> str:
    """The URL without credentials or query string (signed CDN URLs carry tokens there)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def _split(url: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise GGUFError("invalid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GGUFError(f"unsupported URL {_safe(url)!r}: only http(s) is supported")
    return parts


class _RemoteFile:
    """A ``ReadAt`` over HTTP: range requests when the server honours them, otherwise one streamed
    body consumed front to back."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        timeout: float,
        block: int,
        guard: Callable[[str], None] | None = None,
        *,
        policy: OutboundPolicy = STRICT,
    ) -> None:
        self._origin = _origin(_split(url))
        self._guard = guard
        self._policy = policy
        for name, value in headers.items():
            if any(c in name for c in "\r\n\0:") or any(c in value for c in "\r\n\0"):
                raise GGUFError(f"invalid characters in request header {name!r}")
            try:
                name.encode("ascii")
                value.encode("latin-1")
            except UnicodeEncodeError:
                raise GGUFError(f"request header {name!r} is not encodable for HTTP") from None
        self._headers = dict(headers)
        if not any(k.lower() == "user-agent" for k in self._headers):
            self._headers["User-Agent"] = "aim-cache-gguf/1"
        self._timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._block = block
        self._url = url  # the final URL once redirects are resolved
        self._conn: http.client.HTTPConnection | None = None
        self._conn_origin: tuple[str, str, int] | None = None
        self._conn_used = False
        self._first = b""
        self._size: int | None = None
        self._etag: str | None = None
        self._stream: http.client.HTTPResponse | None = None
        self._stream_pos = 0

    # -- plumbing -----------------------------------------------------------------------------------

    def _remaining(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise GGUFError(f"timed out after {self._timeout:g}s reading GGUF header from {_safe(self._url)}")
        return left

    def _connection(self, parts: urllib.parse.SplitResult) -> http.client.HTTPConnection:
        origin = _origin(parts)
        if self._conn is not None and self._conn_origin == origin:
            self._conn.timeout = self._remaining()  # used when it reconnects
            if self._conn.sock is not None:
                self._conn.sock.settimeout(self._conn.timeout)
            return self._conn
        self._drop_connection()
        conn = http_connection(
            parts.scheme, origin[1], origin[2], policy=self._policy, timeout=self._remaining()
        )
        self._conn, self._conn_origin, self._conn_used = conn, origin, False
        return conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._conn_origin, self._conn_used = None, None, False

    def _send(self, url: str, extra: Mapping[str, str]) -> http.client.HTTPResponse:
        parts = _split(url)
        same_origin = _origin(parts) == self._origin
        headers = {k: v for k, v in self._headers.items() if same_origin or k.lower() not in _SENSITIVE}
        headers.update(extra)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        for attempt in range(2):
            conn = self._connection(parts)
            reused = self._conn_used
            try:
                conn.request("GET", target, headers=headers)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._drop_connection()
                if reused and attempt == 0:
                    continue  # a kept-alive connection the server had closed
                raise
            self._conn_used = True
            return resp
        raise AssertionError("unreachable")

    def _get(self, extra: Mapping[str, str]) -> http.client.HTTPResponse:
        """GET following redirects; Authorization/Cookie only go to the original origin."""
        url = self._url
        for _ in range(MAX_REDIRECTS + 1):
            resp = self._send(url, extra)
            if resp.status not in _REDIRECTS:
                self._url = url
                return resp
            location = resp.getheader("Location")
            resp.read(64 << 10)
            if not resp.isclosed():  # a large redirect body: not worth reading to reuse the connection
                self._drop_connection()
            if not location:
                raise GGUFError(
                    f"HTTP {resp.status} redirect without Location from {_safe(url)}", status=resp.status
                )
            url = urllib.parse.urljoin(url, location)
            if self._guard is not None:
                self._guard(url)  # a redirect must not lead where the caller may not go
        raise GGUFError(f"more than {MAX_REDIRECTS} redirects fetching {_safe(self._url)}")

    def _discard(self, resp: http.client.HTTPResponse) -> None:
        """Drop a response we will not use (reading a short error body first lets the connection
        close cleanly instead of with a reset)."""
        with contextlib.suppress(OSError, http.client.HTTPException):
            resp.read(64 << 10)
        self._drop_connection()

    def _fail(self, resp: http.client.HTTPResponse) -> GGUFError:
        reason = f" {resp.reason}" if resp.reason else ""
        self._discard(resp)
        return GGUFError(f"HTTP {resp.status}{reason} fetching {_safe(self._url)}", status=resp.status)

    def _body(self, resp: http.client.HTTPResponse, size: int) -> bytes:
        data = resp.read(size)
        if not resp.isclosed():  # the server sent more than asked (or chunked): don't reuse
            self._drop_connection()
        return data

    def _content_range(self, resp: http.client.HTTPResponse, offset: int) -> None:
        match = _CONTENT_RANGE.fullmatch((resp.getheader("Content-Range") or "").strip())
        if match is None or int(match.group(1)) != offset:
            raise GGUFError(f"unexpected Content-Range for offset {offset} from {_safe(self._url)}")
        if match.group(3) != "*":
            total = int(match.group(3))
            if self._size is not None and total != self._size:
                raise GGUFError(f"remote file changed size while reading {_safe(self._url)}")
            self._size = total
        etag = resp.getheader("ETag")
        if self._etag is not None and etag is not None and etag != self._etag:
            raise GGUFError(f"remote file changed while reading {_safe(self._url)}")
        self._etag = self._etag or etag

    # -- API ----------------------------------------------------------------------------------------

    def open(self) -> None:
        self._remaining()
        resp = self._get({"Range": f"bytes=0-{self._block - 1}"})
        if resp.status == 206:
            self._content_range(resp, 0)
            self._first = self._body(resp, self._block)
        elif resp.status == 200:
            self._stream = resp
        elif resp.status == 416:
            self._discard(resp)
            raise GGUFError(f"not a GGUF file: {_safe(self._url)} is empty (HTTP 416)", status=416)
        else:
            raise self._fail(resp)

    def read_at(self, offset: int, size: int) -> bytes:
        self._remaining()
        if self._stream is not None:
            return self._read_stream(self._stream, offset, size)
        if offset < len(self._first):
            return self._first[offset : offset + size]
        if self._size is not None and offset >= self._size:
            return b""
        resp = self._get({"Range": f"bytes={offset}-{offset + size - 1}"})
        if resp.status == 206:
            self._content_range(resp, offset)
            return self._body(resp, size)
        if resp.status == 416:
            self._discard(resp)
            return b""
        if resp.status == 200:
            resp.close()
            self._drop_connection()
            raise GGUFError(f"server stopped honouring range requests for {_safe(self._url)}")
        raise self._fail(resp)

    def _read_stream(self, resp: http.client.HTTPResponse, offset: int, size: int) -> bytes:
        if offset < self._stream_pos:
            raise GGUFError("internal error: backwards read from a streamed GGUF body")
        while self._stream_pos < offset:  # a skipped array: discard its bytes
            chunk = resp.read(min(_STREAM_DISCARD, offset - self._stream_pos))
            if not chunk:
                return b""
            self._stream_pos += len(chunk)
            self._remaining()
        data = resp.read(size)
        self._stream_pos += len(data)
        return data

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._drop_connection()


def read_remote(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    block: int = 1 << 20,
    guard: Callable[[str], None] | None = None,
    policy: OutboundPolicy = STRICT,
) -> GGUFHeader:
    """Parse the GGUF header of an http(s) URL, transferring only about the header's size.

    A first ``Range: bytes=0-<block-1>`` GET tells whether ranges are honoured (206): then further
    ``block``-sized range GETs are made on demand. Otherwise (200) the body is streamed and the
    connection closed as soon as the header is parsed. Redirects are followed (Authorization and
    Cookie are dropped when leaving the original origin); ``timeout`` bounds the whole read.
    Failures raise ``GGUFError`` carrying the HTTP status, never header values. ``guard`` is called
    with every redirect target before it is fetched (it raises to refuse one); ``policy`` (the service's
    outbound policy; default: the strict one) is applied to every connection (it raises
    :class:`~aimcore.domain.outbound.OutboundRefused`)."""
    if block <= 0:
        raise ValueError("block must be positive")
    remote = _RemoteFile(url, headers or {}, timeout, block, guard, policy=policy)
    try:
        remote.open()
        return parse_header(remote.read_at, block=block)
    except GGUFError:
        raise
    except (OSError, http.client.HTTPException) as exc:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise GGUFError(f"reading GGUF header from {_safe(url)} failed: {detail}") from exc
    finally:
        remote.close()
