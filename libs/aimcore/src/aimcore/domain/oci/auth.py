"""Registry credentials: ``imagePullSecrets`` (``kubernetes.io/dockerconfigjson``) and the
``WWW-Authenticate`` challenges of the distribution API.

A pull secret's ``.dockerconfigjson`` is ``{"auths": {"<registry>": {"auth": base64("user:pass")}}}``
(or ``"username"``/``"password"`` instead of ``"auth"``). Registry keys are matched the way the
kubelet matches them: scheme and ``/v1/``-style API paths ignored, Docker Hub's aliases
(``https://index.docker.io/v1/``, ``docker.io``, ``registry-1.docker.io``, ``index.docker.io``) all
mean ``docker.io``, ``*.example.com`` globs match one DNS label per ``*``, and a path after the host
restricts the entry to repositories under it (the longest match wins).

Error messages name secrets and registries, never their contents.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aimcore.api.imageref import DOCKER_HUB, DOCKER_HUB_ALIASES, InvalidReference, normalize_registry
from aimcore.domain.oci.errors import CredentialsError

DOCKERCONFIGJSON_TYPE = "kubernetes.io/dockerconfigjson"
DOCKERCFG_TYPE = "kubernetes.io/dockercfg"
_API_PATH_RE = re.compile(r"^/*v[12]/*")


@dataclass(frozen=True)
class Credentials:
    """A username and password for basic auth (and for the token endpoint of bearer auth)."""

    username: str
    password: str = field(repr=False)

    def basic_header(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class _Entry:
    host: str  # normalized host[:port], may contain '*' globs
    path: str  # repository prefix ("" = every repository)
    credentials: Credentials = field(repr=False)


@dataclass(frozen=True)
class DockerConfig:
    """Credentials per registry, in the order they were given (the first match of equal
    specificity wins)."""

    entries: tuple[_Entry, ...] = ()

    @classmethod
    def single(cls, registry: str, username: str, password: str) -> DockerConfig:
        return cls((_entry(registry, Credentials(username, password)),))

    def lookup(self, registry: str, repository: str | None = None) -> Credentials | None:
        """Credentials for ``registry`` (``host[:port]`` as in a reference) and ``repository``."""
        try:
            host = normalize_registry(registry)
        except InvalidReference:
            return None
        best: tuple[int, int, int] | None = None
        found: Credentials | None = None
        for index, entry in enumerate(self.entries):
            exact = entry.host == host
            if not exact and not _glob_match(entry.host, host):
                continue
            if entry.path and not _under(repository or "", entry.path):
                continue
            rank = (1 if exact else 0, len(entry.path), -index)
            if best is None or rank > best:
                best, found = rank, entry.credentials
        return found

    def merged(self, other: DockerConfig) -> DockerConfig:
        """Both configs; entries of ``self`` win over equally specific entries of ``other``."""
        return DockerConfig(self.entries + other.entries)

    @property
    def registries(self) -> list[str]:
        return [f"{e.host}/{e.path}" if e.path else e.host for e in self.entries]

    def __bool__(self) -> bool:
        return bool(self.entries)


def parse_dockerconfigjson(
    data: str | bytes | Mapping[str, Any], *, source: str = "docker config"
) -> DockerConfig:
    """Parse the content of ``.dockerconfigjson`` (``{"auths": {...}}``) or of the legacy
    ``.dockercfg`` (the ``auths`` map itself). ``source`` names it in error messages."""
    doc: Any
    if isinstance(data, Mapping):
        doc = data
    else:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise CredentialsError(f"{source} is not valid JSON") from None
    if not isinstance(doc, Mapping):
        raise CredentialsError(f"{source} is not a JSON object")
    auths = doc.get("auths", doc if "auths" not in doc and _looks_like_dockercfg(doc) else None)
    if auths is None:
        auths = {}
    if not isinstance(auths, Mapping):
        raise CredentialsError(f"{source}: 'auths' is not an object")
    entries: list[_Entry] = []
    for key, value in auths.items():
        if not isinstance(key, str) or not isinstance(value, Mapping):
            raise CredentialsError(f"{source}: the entry for {key!s:.100} is not an object")
        creds = _entry_credentials(value, f"{source}, registry {key:.100}")
        if creds is None:
            continue
        try:
            entries.append(_entry(key, creds))
        except InvalidReference:
            raise CredentialsError(f"{source}: {key!r:.100} is not a registry host") from None
    return DockerConfig(tuple(entries))


def credentials_from_secret(secret: Mapping[str, Any]) -> DockerConfig:
    """Credentials of one Kubernetes Secret object (as returned by the API: ``data`` base64).

    Types ``kubernetes.io/dockerconfigjson`` (``.dockerconfigjson``) and the legacy
    ``kubernetes.io/dockercfg`` (``.dockercfg``) are accepted; anything else is a
    :class:`CredentialsError` naming the secret."""
    meta = secret.get("metadata") or {}
    name = f"{meta.get('namespace', '')}/{meta.get('name', '?')}".lstrip("/")
    source = f"secret {name}"
    kind = secret.get("type")
    if kind == DOCKERCONFIGJSON_TYPE:
        key = ".dockerconfigjson"
    elif kind == DOCKERCFG_TYPE:
        key = ".dockercfg"
    else:
        raise CredentialsError(f"{source} has type {kind!r}, not {DOCKERCONFIGJSON_TYPE!r}")
    string_data = secret.get("stringData") or {}
    data = secret.get("data") or {}
    if isinstance(string_data, Mapping) and isinstance(string_data.get(key), str):
        raw: str | bytes = string_data[key]
    elif isinstance(data, Mapping) and isinstance(data.get(key), str | bytes):
        try:
            raw = base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            raise CredentialsError(f"{source}: {key} is not valid base64") from None
    else:
        raise CredentialsError(f"{source} has no {key}")
    return parse_dockerconfigjson(raw, source=source)


def credentials_from_secrets(secrets: Iterable[Mapping[str, Any]]) -> DockerConfig:
    """Credentials of several pull secrets, in order (the first secret wins for a registry)."""
    config = DockerConfig()
    for secret in secrets:
        config = config.merged(credentials_from_secret(secret))
    return config


# ---------------------------------------------------------------------------------------------
# WWW-Authenticate
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header: scheme in lower case, parameters with
    lower-case names (``realm``, ``service``, ``scope``, ``error``...)."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)


_TOKEN_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68_RE = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def parse_www_authenticate(header: str) -> list[Challenge]:
    """Parse ``Bearer realm="...",service="...",scope="..."`` (several challenges allowed, quoted
    strings may contain commas and escapes). Unparseable trailing text is ignored."""
    challenges: list[Challenge] = []
    pos, n = 0, len(header)

    def skip(chars: str) -> None:
        nonlocal pos
        while pos < n and header[pos] in chars:
            pos += 1

    while pos < n:
        skip(" \t,")
        m = _TOKEN_RE.match(header, pos)
        if not m:
            break
        scheme = m.group(0).lower()
        pos = m.end()
        params: dict[str, str] = {}
        while True:
            skip(" \t")
            start = pos
            m = _TOKEN_RE.match(header, pos)
            if not m:
                break
            after = m.end()
            while after < n and header[after] in " \t":
                after += 1
            is_param = after < n and header[after] == "="
            if is_param and not params and (after + 1 >= n or header[after + 1] in "=,"):
                is_param = False  # 'abc==': token68 ending in padding, not a parameter
            if not is_param:
                if not params:  # token68 credentials, e.g. 'Negotiate abc=='
                    t = _TOKEN68_RE.match(header, start)
                    if t and (t.end() >= n or header[t.end()] in " \t,"):
                        params[""] = t.group(0)
                        pos = t.end()
                        skip(" \t")
                        if pos < n and header[pos] == ",":
                            pos += 1
                        break
                pos = start  # the next challenge's scheme
                break
            name = m.group(0).lower()
            pos = after + 1
            skip(" \t")
            value, pos = _read_value(header, pos)
            params[name] = value
            skip(" \t")
            if pos < n and header[pos] == ",":
                pos += 1
                continue
            break
        challenges.append(Challenge(scheme, params))
    return challenges


def _read_value(header: str, pos: int) -> tuple[str, int]:
    n = len(header)
    if pos < n and header[pos] == '"':
        out: list[str] = []
        pos += 1
        while pos < n and header[pos] != '"':
            if header[pos] == "\\" and pos + 1 < n:
                pos += 1
            out.append(header[pos])
            pos += 1
        return "".join(out), min(pos + 1, n)
    m = _TOKEN_RE.match(header, pos)
    if not m:
        return "", pos
    return m.group(0), m.end()


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _entry(key: str, creds: Credentials) -> _Entry:
    text = key.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    host, _, path = text.partition("/")
    host = host.lower()
    if "*" in host:
        if not re.fullmatch(r"[a-z0-9*.\-]+(?::[0-9]+)?", host):
            raise InvalidReference(f"invalid registry pattern {key!r}")
    else:
        host = normalize_registry(host)
    path = _API_PATH_RE.sub("", "/" + path).strip("/")
    if host in DOCKER_HUB_ALIASES:
        host = DOCKER_HUB
    return _Entry(host, path, creds)


def _entry_credentials(value: Mapping[str, Any], where: str) -> Credentials | None:
    auth = value.get("auth")
    if isinstance(auth, str) and auth.strip():
        try:
            decoded = base64.b64decode(auth.strip(), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise CredentialsError(f"{where}: 'auth' is not base64 of 'username:password'") from None
        user, sep, password = decoded.partition(":")
        if not sep:
            raise CredentialsError(f"{where}: 'auth' is not base64 of 'username:password'")
        return Credentials(user, password)
    username, secret = value.get("username"), value.get("password")
    if isinstance(username, str) and username and isinstance(secret, str):
        return Credentials(username, secret)
    if username is not None or secret is not None:
        raise CredentialsError(f"{where}: 'username' and 'password' must both be strings")
    return None  # e.g. only an identity token or an email: nothing this client can use


def _looks_like_dockercfg(doc: Mapping[str, Any]) -> bool:
    return bool(doc) and all(
        isinstance(v, Mapping) and ("auth" in v or "username" in v) for v in doc.values()
    )


def _glob_match(pattern: str, host: str) -> bool:
    if "*" not in pattern:
        return False
    p_host, _, p_port = pattern.partition(":")
    h_host, _, h_port = host.partition(":")
    if p_port != h_port:
        return False
    p_parts, h_parts = p_host.split("."), h_host.split(".")
    return len(p_parts) == len(h_parts) and all(
        fnmatch.fnmatchcase(h, p) for p, h in zip(p_parts, h_parts, strict=True)
    )


def _under(repository: str, prefix: str) -> bool:
    return repository == prefix or repository.startswith(prefix + "/")
