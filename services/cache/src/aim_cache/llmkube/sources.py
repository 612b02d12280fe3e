"""Where an LLMKube ``Model``'s bytes come from, and whether we may fetch them.

``spec.source`` (plus ``spec.files`` and ``spec.mmproj``) is parsed into a :class:`Source`: its kind
(http, file, pvc, oci), the cache key, and the list of files to stage under ``<cache>/<cacheKey>/``
(for ``oci://`` the registry's manifest is the file set: known only once listed, see
:mod:`aim_cache.llmkube.fetch`; pulls are anonymous, the ``Model`` has no credentials field).
The policy checks (:func:`check_local`, :func:`check_remote`) are the security gates the original
operator shipped without (GHSA-jw3m-8q7m-f35r): a ``file://`` or bare-path source was an arbitrary
file read through the controller, and every controller-side HEAD was an SSRF into the cluster
network and the cloud metadata service. Here local paths are refused unless they resolve (symlinks
followed) under an allow-listed root, and remote hosts are refused if any address they resolve to
is link-local or a metadata endpoint (always) or loopback/private/CGNAT (unless explicitly
allowed). Schemes are matched case-insensitively so ``HTTP://`` cannot dodge a check, and URLs
with embedded credentials are rejected outright (credentials belong in a secret, and would
otherwise leak into status, events and logs). ``files``/``mmproj`` entries are validated as
canonical relative paths so nothing can be staged outside the model's cache directory.

The address rules are the operator's shared outbound policy (:mod:`aimcore.domain.outbound`); this
module applies them to a Model's source. Everything is pure except the DNS lookup in
:func:`check_remote`, which is injectable.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

from aim_cache_jobs.downloader.errors import redact_url
from aimcore.api.errors import AimError
from aimcore.api.imageref import api_host, parse_reference
from aimcore.api.sourcerules import source_uri_error
from aimcore.domain.families.llmkube import LLMKubeModel
from aimcore.domain.outbound import (
    OutboundPolicy,
    OutboundRefused,
    check_addresses,
    check_host,
    normalize_host,
)
from aimcore.domain.outbound.proxy import Proxies

INVALID_SOURCE: Final = "InvalidSource"
SOURCE_NOT_ALLOWED: Final = "SourceNotAllowed"
INVALID_FILE_SET: Final = "InvalidFileSet"

HF_HOSTS = frozenset({"huggingface.co", "www.huggingface.co"})
HF_DEFAULT_REVISION = "main"
DEFAULT_FILENAME = "model.gguf"
# Names the cache's downloader keeps next to the staged files; a staged file must not shadow them.
RESERVED_NAMES = frozenset({".aim-manifest.json", ".aim-partial", ".aim-partial.lock", ".aim-source.json"})

_CLAIM_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 200

Reason = Literal["InvalidSource", "SourceNotAllowed", "InvalidFileSet"]


class SourceError(AimError, ValueError):
    """A permanent problem with the source: fix the spec (or the policy), retrying will not help."""

    reason: Reason = INVALID_SOURCE
    transient = False

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message, reason=reason)


class SourceUnreachable(AimError):
    """A transient problem (the host does not resolve right now): retry later."""

    reason = "SourceUnreachable"
    transient = True


@dataclass(frozen=True)
class StagedFile:
    """One file to stage at ``<cache>/<cacheKey>/<relative>``, from ``url`` or the local path ``local``."""

    relative: str
    url: str | None
    local: str | None
    primary: bool
    mmproj: bool


@dataclass(frozen=True)
class Source:
    """A parsed ``spec.source``; ``files`` is empty for pvc:// (the claim is mounted, nothing is
    staged) and for oci:// (the artifact's layers are the files; ``url`` is the reference)."""

    kind: Literal["http", "file", "pvc", "oci"]
    url: str | None
    path: str | None
    claim: str | None
    cache_key: str
    files: tuple[StagedFile, ...]

    @property
    def staged_files(self) -> list[str]:
        """The value for ``status.stagedFiles``: the relative path of every staged file, primary first."""
        return [f.relative for f in self.files]


def cache_key(source: str, files: Sequence[str] = (), mmproj: str | None = None) -> str:
    """First 16 hex characters of the SHA-256 of the literal source string (LLMKube's ``cachekey``).

    With ``files`` or ``mmproj`` the file set is hashed too (the original keyed on the source alone,
    so two Models staging different files of one repository shared a directory and each fetch
    removed the other's files); a single-file source keeps LLMKube's key.
    """
    text = source
    if files or mmproj is not None:
        text = "\0".join([source, "files", *files, "mmproj", mmproj or ""])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def source_of(model: LLMKubeModel) -> Source:
    """The Model's ``spec.source``, ``spec.files`` and ``spec.mmproj`` parsed (:func:`parse_source`)."""
    return parse_source(model.source, model.files, model.mmproj)


def parse_source(source: str, files: Sequence[str] | None = None, mmproj: str | None = None) -> Source:
    """Parse a Model's ``spec.source`` (with ``spec.files`` and ``spec.mmproj``) into a :class:`Source`.

    Raises :class:`SourceError` with reason ``InvalidSource`` or ``InvalidFileSet``.
    """
    raw = source
    if not raw:
        raise SourceError(INVALID_SOURCE, "spec.source is required")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise SourceError(INVALID_SOURCE, "spec.source must not contain whitespace or control characters")
    names, proj = _validate_file_set(files, mmproj)
    key = cache_key(raw, names, proj)
    scheme, sep, _ = raw.partition("://")
    scheme = scheme.lower() if sep else ""
    if scheme in ("http", "https"):
        return _parse_http(raw, key, names, proj)
    if scheme == "file":
        return _parse_local(raw[len("file://") :], key, names, proj, original="file://")
    if scheme == "pvc":
        return _parse_pvc(raw[len("pvc://") :], key, names, proj)
    if scheme == "oci":
        return _parse_oci(raw, key, names, proj)
    if not sep and raw.startswith("/"):
        return _parse_local(raw, key, names, proj, original="path")
    if scheme == "hf" or (not sep and "/" in raw):
        raise SourceError(
            INVALID_SOURCE,
            "Hugging Face repository ids (hf://org/repo, org/repo) and relative paths are not staged "
            "by the cache; "
            "use https://huggingface.co/<org>/<repo> with spec.files, or a .../resolve/<rev>/<file> URL",
        )
    shown = "a relative path"
    if sep:
        shown = f"{scheme}://" if re.fullmatch(r"[a-z][a-z0-9+.-]{0,31}", scheme) else "unknown scheme"
    raise SourceError(
        INVALID_SOURCE,
        f"unsupported source ({shown}): use http(s)://, file:///abs/path, /abs/path, pvc://claim/path "
        "or oci://registry/repository:tag",
    )


def _validate_file_set(files: Sequence[str] | None, mmproj: str | None) -> tuple[tuple[str, ...], str | None]:
    names: list[str] = []
    if files is not None:
        for i, entry in enumerate(files):
            names.append(_check_relative(entry, f"spec.files[{i}]"))
    proj = None if mmproj is None else _check_relative(mmproj, "spec.mmproj")
    seen: set[str] = set()
    for name in [*names, *([proj] if proj is not None else [])]:
        if name in seen:
            raise SourceError(
                INVALID_FILE_SET, f"{name!r} is listed more than once in spec.files/spec.mmproj"
            )
        seen.add(name)
    return tuple(names), proj


def _check_relative(entry: str, where: str) -> str:
    """A canonical relative path: no empty/``.``/``..`` segments, not absolute, no backslashes."""
    if not entry:
        raise SourceError(INVALID_FILE_SET, f"{where} must be a non-empty relative path")
    if entry.startswith("/"):
        raise SourceError(INVALID_FILE_SET, f"{where} ({entry!r}) must be relative, not absolute")
    if "\\" in entry:
        raise SourceError(INVALID_FILE_SET, f"{where} ({entry!r}) must use '/' separators, not backslashes")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in entry):
        raise SourceError(INVALID_FILE_SET, f"{where} must not contain control characters")
    for segment in entry.split("/"):
        if segment in ("", ".", ".."):
            raise SourceError(
                INVALID_FILE_SET,
                f"{where} ({entry!r}) must stay inside the model directory (no empty, '.' or '..' segments)",
            )
        if segment in RESERVED_NAMES:
            raise SourceError(INVALID_FILE_SET, f"{where} ({entry!r}) uses a name reserved by the cache")
    return entry


def _sanitize_basename(name: str) -> str:
    cleaned = _UNSAFE_NAME_CHARS.sub("_", name).lstrip("._")[:_MAX_NAME]
    if not cleaned.strip("._-"):
        return DEFAULT_FILENAME
    return cleaned


def _staged(
    primary: tuple[str, str | None, str | None],
    rest: Sequence[tuple[str, str | None, str | None]],
    mmproj: tuple[str, str | None, str | None] | None,
) -> tuple[StagedFile, ...]:
    out = [StagedFile(primary[0], primary[1], primary[2], primary=True, mmproj=False)]
    out += [StagedFile(rel, url, local, primary=False, mmproj=False) for rel, url, local in rest]
    if mmproj is not None:
        out.append(StagedFile(mmproj[0], mmproj[1], mmproj[2], primary=False, mmproj=True))
    return tuple(out)


def _quote_path(relative: str) -> str:
    return "/".join(quote(segment, safe="") for segment in relative.split("/"))


def _parse_http(raw: str, key: str, files: tuple[str, ...], mmproj: str | None) -> Source:
    try:
        parts = urlsplit(raw)
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        raise SourceError(INVALID_SOURCE, "spec.source is not a valid URL") from None
    if "@" in parts.netloc:
        raise SourceError(
            INVALID_SOURCE,
            "spec.source must not embed credentials (user:password@host); use a secret instead",
        )
    if not parts.hostname:
        raise SourceError(INVALID_SOURCE, f"spec.source has no host: {redact_url(raw)}")
    scheme = parts.scheme.lower()
    if parts.hostname.lower() in HF_HOSTS:
        return _parse_hf(scheme, parts, key, files, mmproj)
    url = urlunsplit((scheme, parts.netloc, parts.path, parts.query, ""))
    if files:
        base_path = parts.path.rstrip("/")

        def join(rel: str) -> str:
            return urlunsplit((scheme, parts.netloc, f"{base_path}/{_quote_path(rel)}", parts.query, ""))

        staged = _staged(
            (files[0], join(files[0]), None),
            [(f, join(f), None) for f in files[1:]],
            (mmproj, join(mmproj), None) if mmproj else None,
        )
        return Source("http", join(files[0]), None, None, key, staged)
    basename = _sanitize_basename(unquote(parts.path.rsplit("/", 1)[-1]))
    proj = None
    if mmproj is not None:
        directory = parts.path.rsplit("/", 1)[0]
        proj = (
            mmproj,
            urlunsplit((scheme, parts.netloc, f"{directory}/{_quote_path(mmproj)}", "", "")),
            None,
        )
    if mmproj == basename:
        raise SourceError(INVALID_FILE_SET, f"spec.mmproj ({mmproj!r}) collides with the primary file")
    return Source("http", url, None, None, key, _staged((basename, url, None), [], proj))


def _parse_hf(
    scheme: str, parts: SplitResult, key: str, files: tuple[str, ...], mmproj: str | None
) -> Source:
    """``https://huggingface.co/[datasets/]<org>/<repo>[/(tree|resolve|blob)/<rev>[/<path>]]``.

    With ``files`` the URL must name the repository (optionally at a revision); every file becomes
    ``.../<org>/<repo>/resolve/<rev>/<file>``. Without, it must name one file (``blob`` is rewritten
    to ``resolve``, the raw-bytes endpoint); ``mmproj`` is then repository-relative at the same rev.
    """
    netloc, path = parts.netloc, parts.path
    segments = path.split("/")[1:] if path else []
    prefix: list[str] = []
    if segments and segments[0] in ("datasets", "spaces"):
        prefix, segments = segments[:1], segments[1:]
    if segments and segments[-1] == "":
        segments = segments[:-1]  # trailing slash
    if len(segments) < 2 or not all(segments):
        raise SourceError(
            INVALID_SOURCE,
            f"not a Hugging Face repository URL: {redact_url(f'{scheme}://{netloc}{path}')}",
        )
    repo = "/".join([*prefix, segments[0], segments[1]])
    rest = segments[2:]
    revision = HF_DEFAULT_REVISION
    inner: list[str] = []
    if rest:
        if rest[0] not in ("tree", "resolve", "blob") or len(rest) < 2:
            raise SourceError(
                INVALID_SOURCE,
                "a Hugging Face URL must look like .../<org>/<repo>, .../tree/<rev> "
                "or .../resolve/<rev>/<file>",
            )
        revision, inner = rest[1], rest[2:]

    def resolve(rel_quoted: str) -> str:
        return urlunsplit((scheme, netloc, f"/{repo}/resolve/{revision}/{rel_quoted}", "", ""))

    if files:
        if inner:
            raise SourceError(
                INVALID_FILE_SET,
                "with spec.files (repository-relative paths) the source must name the repository "
                "(.../<org>/<repo> or .../tree/<rev>), not a path inside it",
            )
        staged = _staged(
            (files[0], resolve(_quote_path(files[0])), None),
            [(f, resolve(_quote_path(f)), None) for f in files[1:]],
            (mmproj, resolve(_quote_path(mmproj)), None) if mmproj else None,
        )
        return Source("http", staged[0].url, None, None, key, staged)
    if not inner or rest[0] == "tree":
        raise SourceError(
            INVALID_SOURCE,
            "source names a Hugging Face repository or directory; list the files to stage in "
            "spec.files, or point source at .../resolve/<rev>/<file>",
        )
    url = resolve("/".join(inner))  # keep the user's encoding of the file path; blob -> resolve
    basename = _sanitize_basename(unquote(inner[-1]))
    proj = (mmproj, resolve(_quote_path(mmproj)), None) if mmproj is not None else None
    if mmproj == basename:
        raise SourceError(INVALID_FILE_SET, f"spec.mmproj ({mmproj!r}) collides with the primary file")
    return Source("http", url, None, None, key, _staged((basename, url, None), [], proj))


def _parse_local(path: str, key: str, files: tuple[str, ...], mmproj: str | None, *, original: str) -> Source:
    if not path.startswith("/"):
        hint = "file:// URLs must be absolute (file:///path)" if original == "file://" else "not absolute"
        raise SourceError(INVALID_SOURCE, f"local source {path!r} is invalid: {hint}")
    if files:
        directory = path.rstrip("/") or "/"
        staged = _staged(
            (files[0], None, posixpath.join(directory, files[0])),
            [(f, None, posixpath.join(directory, f)) for f in files[1:]],
            (mmproj, None, posixpath.join(directory, mmproj)) if mmproj else None,
        )
        return Source("file", None, directory, None, key, staged)
    if path.endswith("/"):
        raise SourceError(
            INVALID_SOURCE, f"local source {path!r} names a directory; list the files to stage in spec.files"
        )
    basename = _sanitize_basename(posixpath.basename(path))
    proj = None
    if mmproj is not None:
        proj = (mmproj, None, posixpath.join(posixpath.dirname(path), mmproj))
        if mmproj == basename:
            raise SourceError(INVALID_FILE_SET, f"spec.mmproj ({mmproj!r}) collides with the primary file")
    return Source("file", None, path, None, key, _staged((basename, None, path), [], proj))


def _parse_pvc(rest: str, key: str, files: tuple[str, ...], mmproj: str | None) -> Source:
    if files or mmproj is not None:
        raise SourceError(
            INVALID_FILE_SET,
            "spec.files and spec.mmproj are not supported for pvc:// sources (the claim is mounted as is)",
        )
    claim, _, inner = rest.partition("/")
    if not _CLAIM_RE.match(claim):
        raise SourceError(INVALID_SOURCE, f"pvc:// source needs a valid claim name, got {claim!r}")
    if not inner:
        raise SourceError(INVALID_SOURCE, "pvc:// source needs a path inside the claim: pvc://<claim>/<path>")
    try:
        _check_relative(inner.rstrip("/"), "the path inside the claim")
    except SourceError as exc:
        raise SourceError(INVALID_SOURCE, exc.message) from None
    return Source("pvc", None, inner, claim, key, ())


def _parse_oci(raw: str, key: str, files: tuple[str, ...], mmproj: str | None) -> Source:
    """``oci://REGISTRY/REPO:TAG`` or ``...@sha256:…`` (the downloader's rule for the reference)."""
    if files or mmproj is not None:
        raise SourceError(
            INVALID_FILE_SET,
            "spec.files and spec.mmproj are not supported for oci:// sources (the artifact's layers are "
            "the files; the first .gguf is the primary)",
        )
    reference = "oci://" + raw[len("oci://") :]  # the scheme in lower case, as the downloader reads it
    error = source_uri_error(reference)
    if error is not None:
        raise SourceError(INVALID_SOURCE, error)
    return Source("oci", reference, None, None, key, ())


def registry_url(source: Source) -> str:
    """The ``oci://`` source's registry as a URL, for the address checks (its host and port)."""
    assert source.kind == "oci" and source.url is not None
    return f"https://{api_host(parse_reference(source.url[len('oci://') :]).registry)}/"


# ---------------------------------------------------------------------------------------------
# Policy
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """What may be fetched: local roots (empty: no local source at all) and, for remote hosts, the
    outbound address policy (:mod:`aimcore.domain.outbound`) as this path configures it."""

    allowed_roots: tuple[str, ...] = ()
    allowed_hosts: frozenset[str] = frozenset()
    allow_private: bool = False
    proxies: Proxies = field(default_factory=Proxies)

    @property
    def outbound(self) -> OutboundPolicy:
        """The shared outbound policy with this path's hosts and private switch (and the
        operator's forward proxies)."""
        return OutboundPolicy(self.allowed_hosts, self.allow_private, self.proxies, hint=POLICY_HINT)


POLICY_HINT = (
    "AIM_LLMKUBE_ALLOWED_HOSTS (or AIM_OUTBOUND_ALLOWED_HOSTS)",
    "AIM_LLMKUBE_ALLOW_PRIVATE=true (or AIM_OUTBOUND_ALLOW_PRIVATE=true)",
)


def default_resolve(host: str) -> list[str]:
    """Every address ``host`` resolves to (``socket.getaddrinfo``); raises ``OSError`` on failure."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_local(path: str, policy: Policy) -> str:
    """The real path of ``path`` (symlinks followed) if under an allowed root, else ``SourceNotAllowed``."""
    if not policy.allowed_roots:
        raise SourceError(
            SOURCE_NOT_ALLOWED,
            f"local path {path!r} is not under an allowed root (AIM_LLMKUBE_ALLOWED_ROOTS is empty, "
            "so local sources are disabled)",
        )
    try:
        real = posixpath.realpath(path)
        roots = [posixpath.realpath(root) for root in policy.allowed_roots if root]
    except ValueError:  # NUL byte
        raise SourceError(INVALID_SOURCE, "local path contains a NUL byte") from None
    for root in roots:
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return real
    raise SourceError(
        SOURCE_NOT_ALLOWED, f"local path {path!r} is not under an allowed root (AIM_LLMKUBE_ALLOWED_ROOTS)"
    )


def check_remote(url: str, policy: Policy, resolve: Callable[[str], list[str]] = default_resolve) -> None:
    """Refuse (``SourceNotAllowed``) a URL whose host is, or resolves to, an address we must not reach.

    The shared outbound policy decides (:mod:`aimcore.domain.outbound`): hosts in ``policy.allowed_hosts``
    pass unchecked; otherwise every resolved address is checked (one bad address is enough to
    refuse: a resolver may hand the client any of them). Raises :class:`SourceUnreachable` when
    the host does not resolve (transient). The connections themselves apply the policy again at
    connect time (``fetch``), so an answer that changes between here and there is refused too.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        raise SourceError(INVALID_SOURCE, "not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise SourceError(INVALID_SOURCE, f"not an http(s) URL with a host: {redact_url(url)}")
    outbound = policy.outbound
    host = normalize_host(parts.hostname)
    try:
        if check_host(host, outbound) is not None or outbound.allows_host(host):
            return
        try:
            resolved = resolve(host)
        except OSError as exc:
            raise SourceUnreachable(f"cannot resolve host {host!r}: {exc}") from None
        if not resolved:
            raise SourceUnreachable(f"cannot resolve host {host!r}: no addresses")
        check_addresses(host, resolved, outbound)
    except OutboundRefused as exc:
        raise SourceError(SOURCE_NOT_ALLOWED, exc.message) from None


def check_source(
    source: Source, policy: Policy, resolve: Callable[[str], list[str]] = default_resolve
) -> tuple[str, ...]:
    """Apply the policy to every file of ``source``; returns the checked real paths of local files.

    Each local file is checked on its own (a symlink inside an allowed directory can point out of
    it). pvc:// sources need no check: the claim is mounted into the workload, never read by us.
    An oci:// source's registry is checked (its blobs' redirects are checked as they connect).
    """
    real: list[str] = []
    hosts_checked: set[str] = set()
    if source.kind == "oci":
        check_remote(registry_url(source), policy, resolve)
    for staged in source.files:
        if staged.local is not None:
            real.append(check_local(staged.local, policy))
        if staged.url is not None:
            host = (urlsplit(staged.url).hostname or "").lower()
            if host not in hosts_checked:
                check_remote(staged.url, policy, resolve)
                hosts_checked.add(host)
    return tuple(real)
