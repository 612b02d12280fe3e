"""``oci://REGISTRY/REPO:TAG`` and ``oci://REGISTRY/REPO@sha256:…`` model sources: a model pushed to
a container registry as an OCI artifact, resolved with oras-py and listed as blobs for the one
transfer engine (ranged, resumable, progress offered, every byte hashed).

What is fetched is chosen from the manifest (:func:`select_blobs`, pure):

- a Docker model (``docker model package``: config ``application/vnd.docker.ai.model.config.*``):
  its GGUF layers (``application/vnd.docker.ai.gguf.v3``), its licenses
  (``application/vnd.docker.ai.license``) and the config blob itself; layers of other media types
  are not fetched. Files are named by their ``org.opencontainers.image.title`` annotation, else
  ``model.gguf`` (``model-00001-of-0000N.gguf`` for shards), ``LICENSE`` and
  ``docker-model-config.json``;
- any other artifact (``oras push``): every layer, named by its title annotation. A layer without
  one (a container image's filesystem) or an ORAS-packed directory is refused
  (``UnsupportedMediaType``), as is an image index.

Every blob is verified against the sha256 digest the manifest gives for it, and a manifest pinned
by digest against that digest. oras-py speaks the distribution API (references, manifest URLs and
``Accept`` headers, its ``Registry`` as the client) with three replacements: a ``requests`` session
whose every connection applies the outbound policy (redirects and the token realm included), one
request per call instead of its retry loop (which sleeps up to minutes, even for a refused
password: the operator's attempts have their own backoff), and credentials from the pull secrets
only (never a ``~/.docker`` file), sent to a token realm only over HTTPS or on the registry's host.

Credentials come from the model's env: ``OCI_USERNAME``/``OCI_PASSWORD``, ``OCI_DOCKERCONFIGJSON``
(a ``.dockerconfigjson``), and ``AIM_OCI_PULL_SECRET_<n>`` (the cache's ``imagePullSecrets``, added
by the cache service), matched to the registry as the kubelet matches pull secrets.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy
from typing import Any
from urllib.parse import urlsplit

import oras.container
import oras.defaults
import oras.provider
import requests

from aim_cache_jobs.contract import PULL_SECRET_ENV
from aim_cache_jobs.downloader.errors import (
    AUTH_ERROR,
    CHECKSUM_MISMATCH,
    DOWNLOAD_FAILED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    UNSUPPORTED_MEDIA_TYPE,
    DownloadError,
)
from aim_cache_jobs.downloader.fetch import refused
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile, validate_path
from aim_cache_jobs.downloader.poolguard import guarded_session
from aim_cache_jobs.downloader.sourceuri import ParsedSource, tls_verify, truthy
from aimcore.api.imageref import ImageReference, api_host, parse_reference
from aimcore.api.sourcerules import source_uri_error
from aimcore.domain.oci.auth import (
    Challenge,
    Credentials,
    DockerConfig,
    parse_dockerconfigjson,
    parse_www_authenticate,
)
from aimcore.domain.oci.errors import CredentialsError
from aimcore.domain.outbound import OutboundPolicy, refusal_in

SCHEME = "oci://"
GGUF = "application/vnd.docker.ai.gguf.v3"
LICENSE = "application/vnd.docker.ai.license"
MODEL_CONFIG = "application/vnd.docker.ai.model.config.v0.1+json"
MODEL_CONFIG_PREFIX = "application/vnd.docker.ai.model.config"
TITLE = oras.defaults.annotation_title
UNPACK = oras.defaults.annotation_unpack
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = frozenset(
    {"application/vnd.oci.image.index.v1+json", oras.defaults.docker_manifest_list_media_type}
)
CONFIG_FILE = "docker-model-config.json"
USERNAME_ENV, PASSWORD_ENV = "OCI_USERNAME", "OCI_PASSWORD"
DOCKERCONFIG_ENV = "OCI_DOCKERCONFIGJSON"
PLAIN_HTTP_ENV = "OCI_PLAIN_HTTP"
MAX_MANIFEST = 4 << 20
TIMEOUT = (10.0, 60.0)
TOKEN_MARGIN = 30.0
"""Seconds before a bearer token expires at which the next request fetches a new one."""


@dataclass(frozen=True)
class Blob:
    """One file of the artifact: where it goes, and the blob it is."""

    path: str
    digest: str  # "sha256:<hex>"
    size: int
    media_type: str


# ---------------------------------------------------------------------------------------------
# Pure: the reference, the files, the credentials
# ---------------------------------------------------------------------------------------------


def parse_oci(uri: str) -> ImageReference:
    """The reference of ``oci://REGISTRY/REPO[:TAG][@sha256:…]``; ``InvalidSource`` otherwise
    (the spec's rule, :func:`aimcore.api.sourcerules.source_uri_error`: the registry must be
    named, a digest must be sha256)."""
    error = source_uri_error(uri)
    if error is not None:
        raise DownloadError(INVALID_SOURCE, error)
    return parse_reference(uri[len(SCHEME) :])


def _unsupported(where: str, why: str) -> DownloadError:
    return DownloadError(UNSUPPORTED_MEDIA_TYPE, f"{where}: {why}")


def _descriptor(entry: Any, where: str) -> tuple[str, int, str, Mapping[str, str]]:
    if not isinstance(entry, Mapping):
        raise DownloadError(INVALID_SOURCE, f"{where}: a manifest entry is not an object")
    digest, size, media_type = entry.get("digest"), entry.get("size"), entry.get("mediaType")
    hexpart = str(digest).removeprefix("sha256:")
    if not (isinstance(digest, str) and digest.startswith("sha256:") and len(hexpart) == 64):
        raise DownloadError(INVALID_SOURCE, f"{where}: blob digest {digest!r} is not a sha256 digest")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise DownloadError(INVALID_SOURCE, f"{where}: blob {digest} has no valid size")
    annotations = entry.get("annotations") or {}
    return digest, size, str(media_type or ""), annotations if isinstance(annotations, Mapping) else {}


def _numbered(name: str, index: int, count: int) -> str:
    if count == 1:
        return name
    stem, dot, ext = name.partition(".")
    return f"{stem}-{index + 1:05d}-of-{count:05d}{dot}{ext}"


def select_blobs(manifest: Any, media_type: str, where: str) -> tuple[Blob, ...]:
    """The files of the artifact ``manifest`` describes (see the module docstring). ``media_type``
    is what the registry said the manifest is (its own ``mediaType`` wins); ``where`` names the
    source in messages."""
    if not isinstance(manifest, Mapping):
        raise DownloadError(INVALID_SOURCE, f"{where}: the manifest is not a JSON object")
    kind = str(manifest.get("mediaType") or media_type).split(";", 1)[0].strip()
    if kind in INDEXES:
        raise _unsupported(
            where, "an image index (several platforms), not a model artifact; name one manifest"
        )
    if kind not in (OCI_MANIFEST, DOCKER_MANIFEST):
        raise _unsupported(where, f"manifest media type {kind!r} is not an OCI or Docker image manifest")
    layers = manifest.get("layers")
    if not isinstance(layers, Sequence) or isinstance(layers, str | bytes):
        raise DownloadError(INVALID_SOURCE, f"{where}: the manifest has no layers list")
    config = _descriptor(manifest.get("config"), where)
    described = [_descriptor(layer, where) for layer in layers]
    blobs: list[Blob] = []
    if config[2].startswith(MODEL_CONFIG_PREFIX):
        for wanted, default in ((GGUF, "model.gguf"), (LICENSE, "LICENSE")):
            chosen = [d for d in described if d[2] == wanted]
            for i, (digest, size, mt, notes) in enumerate(chosen):
                blobs.append(Blob(notes.get(TITLE) or _numbered(default, i, len(chosen)), digest, size, mt))
        if not any(b.media_type == GGUF for b in blobs):
            kinds = ", ".join(sorted({d[2] for d in described})) or "none"
            raise _unsupported(where, f"a Docker model without a GGUF layer ({GGUF}); its layers: {kinds}")
        blobs.append(Blob(CONFIG_FILE, config[0], config[1], config[2]))
    else:
        for digest, size, mt, notes in described:
            if notes.get(UNPACK) or (TITLE in notes and mt == oras.defaults.default_blob_dir_media_type):
                raise _unsupported(
                    where,
                    f"layer {notes.get(TITLE)!r} is a directory packed by ORAS; push its files one by one",
                )
            if not notes.get(TITLE):
                raise _unsupported(
                    where,
                    f"layer {digest} ({mt or 'no media type'}) has no {TITLE} annotation: a container "
                    f"image or an artifact without file names, not a model's files (push a Docker model "
                    f"with config {MODEL_CONFIG}, or files with `oras push`)",
                )
            blobs.append(Blob(notes[TITLE], digest, size, mt))
        if not blobs:
            raise _unsupported(where, "the artifact has no layers")
    seen: set[str] = set()
    for blob in blobs:
        validate_path(blob.path)
        if blob.path in seen:
            raise DownloadError(INVALID_SOURCE, f"{where}: two layers are named {blob.path!r}")
        seen.add(blob.path)
    return tuple(blobs)


def credentials(env: Mapping[str, str], ref: ImageReference) -> Credentials | None:
    """The credentials ``env`` gives for ``ref``'s registry and repository (``OCI_USERNAME`` and
    ``OCI_PASSWORD`` first, then ``OCI_DOCKERCONFIGJSON``, then the pull secrets in order)."""
    username, password = env.get(USERNAME_ENV, "").strip(), env.get(PASSWORD_ENV, "")
    if username:
        return Credentials(username, password)
    secrets = sorted(
        (k for k in env if k.startswith(PULL_SECRET_ENV)),
        key=lambda k: (len(k), k),
    )
    config = DockerConfig()
    for name in ([DOCKERCONFIG_ENV] if env.get(DOCKERCONFIG_ENV) else []) + secrets:
        try:
            config = config.merged(parse_dockerconfigjson(env[name], source=f"env {name}"))
        except CredentialsError as e:
            raise DownloadError(AUTH_ERROR, e.message) from None
    return config.lookup(ref.registry, ref.repository)


# ---------------------------------------------------------------------------------------------
# I/O: the registry through oras-py
# ---------------------------------------------------------------------------------------------


class _Auth:
    """oras-py's auth backend, replaced: Basic or Bearer as the registry's challenge asks, the
    token renewed before it expires (the blob transfers ask for headers on every request)."""

    def __init__(
        self, session: requests.Session, creds: Credentials | None, ref: ImageReference, origin: str
    ):
        self.session, self.creds, self.ref, self.origin = session, creds, ref, origin
        self.header: str | None = None
        self.challenge: Challenge | None = None
        self.expires = float("inf")
        self.lock = threading.Lock()

    def load_configs(self, *args: Any, **kwargs: Any) -> None:
        """oras-py would read ``~/.docker/config.json``: credentials come from the env only."""

    def headers(self) -> dict[str, str]:
        with self.lock:
            if self.challenge is not None and time.monotonic() >= self.expires:
                self._token(self.challenge)
            return {"Authorization": self.header} if self.header else {}

    def answer(self, response: requests.Response) -> bool:
        """Take up the challenge of a 401; whether the request is worth sending again."""
        challenges = parse_www_authenticate(response.headers.get("WWW-Authenticate", ""))
        with self.lock:
            for challenge in challenges:
                if challenge.scheme == "bearer" and challenge.params.get("realm"):
                    self.challenge = challenge
                    self._token(challenge)
                    return True
                if challenge.scheme == "basic" and self.creds is not None:
                    basic = self.creds.basic_header()
                    if self.header == basic:
                        return False  # the password itself was refused
                    self.header = basic
                    return True
        return False

    def _token(self, challenge: Challenge) -> None:
        realm = challenge.params["realm"]
        parts = urlsplit(realm)
        same_host = (parts.hostname or "").lower() == (urlsplit(self.origin).hostname or "").lower()
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DownloadError(AUTH_ERROR, f"{self.ref.registry} names an unusable token realm")
        if self.creds is not None and parts.scheme != "https" and not same_host:
            raise DownloadError(
                "InsecureTokenRealm",
                f"{self.ref.registry} sends its pull-secret credentials to {parts.hostname} over plain "
                "HTTP: refused",
                transient=False,
            )
        params = {k: v for k, v in challenge.params.items() if k in ("service", "scope")}
        params.setdefault("scope", f"repository:{self.ref.repository}:pull")
        headers = {"Authorization": self.creds.basic_header()} if self.creds is not None else {}
        response = self.session.get(realm, params=params, headers=headers, timeout=TIMEOUT)
        if response.status_code in (401, 403):
            raise DownloadError(
                AUTH_ERROR, f"the token service of {self.ref.registry} refused the credentials"
            )
        if response.status_code != 200:
            raise _status(response.status_code, f"the token service of {self.ref.registry}")
        try:
            body = response.json()
            token = body.get("token") or body.get("access_token")
            lifetime = float(body.get("expires_in") or 60)
        except (ValueError, AttributeError, TypeError):
            token = None
        if not isinstance(token, str) or not token:
            raise DownloadError(AUTH_ERROR, f"the token service of {self.ref.registry} gave no token")
        self.header = f"Bearer {token}"
        self.expires = time.monotonic() + max(lifetime - TOKEN_MARGIN, lifetime / 2)


def _status(status: int, what: str) -> DownloadError:
    if status >= 500 or status == 429:
        return DownloadError(SOURCE_UNREACHABLE, f"{what} answered HTTP {status}")
    return DownloadError(DOWNLOAD_FAILED, f"{what} answered HTTP {status}")


class _Registry(oras.provider.Registry):  # type: ignore[misc]
    """oras-py's client with the replacements the module docstring names."""

    def __init__(self, ref: ImageReference, env: Mapping[str, str], policy: OutboundPolicy) -> None:
        self.ref = ref
        self.verify = tls_verify(ParsedSource(uri=SCHEME, scheme="oci"), env)
        plain = ref.loopback or truthy(env.get(PLAIN_HTTP_ENV))
        super().__init__(hostname=api_host(ref.registry), insecure=plain, tls_verify=self.verify)
        self.session = guarded_session(policy)
        self.session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
        self.origin = f"{self.prefix}://{self.hostname}"
        self.auth = _Auth(self.session, credentials(env, ref), ref, self.origin)
        self.response: requests.Response | None = None

    def do_request(  # noqa: PLR0917 - oras-py's signature
        self,
        url: str,
        method: str = "GET",
        data: dict[str, Any] | bytes | None = None,
        headers: dict[str, str] | None = None,
        json: dict[str, Any] | None = None,
        stream: bool = False,
    ) -> requests.Response:
        """One request (and one more after answering an auth challenge), never retried here."""
        for _ in range(2):
            sent = {**(headers or {}), **self.auth.headers()}
            self.response = self.session.request(
                method,
                url,
                data=data,
                json=json,
                headers=sent,
                stream=stream,
                verify=self.verify,
                timeout=TIMEOUT,
            )
            if self.response.status_code != 401 or not self.auth.answer(self.response):
                return self.response
        assert self.response is not None
        return self.response

    def _check_200_response(self, response: requests.Response) -> None:
        status, where = response.status_code, f"{SCHEME}{self.ref.name}:{self.ref.reference}"
        if status == 200:
            return
        if status == 404:
            raise DownloadError(
                SOURCE_NOT_FOUND, f"{where}: no such tag, digest or repository ({_code(response)})"
            )
        if status in (401, 403):
            given = (
                "the credentials were refused"
                if self.auth.creds
                else "it needs credentials and none were given"
            )
            raise DownloadError(AUTH_ERROR, f"{where}: {given} (HTTP {status})")
        raise _status(status, where)

    def signer(self, method: str, url: str, headers: Mapping[str, str]) -> dict[str, str]:
        """The downloader's per-request hook: the current credentials for a blob GET."""
        return {**headers, **self.auth.headers()}


def _code(response: requests.Response) -> str:
    try:
        errors = response.json().get("errors") or []
        return str(errors[0].get("code") or "HTTP 404")
    except (ValueError, AttributeError, IndexError, TypeError):
        return "HTTP 404"


def _failure(error: Exception, ref: ImageReference) -> DownloadError:
    refusal = refusal_in(error)
    if refusal is not None:
        return refused(refusal)
    if isinstance(error, requests.TooManyRedirects):
        return DownloadError(DOWNLOAD_FAILED, f"too many redirects from {ref.registry}")
    if isinstance(error, requests.exceptions.SSLError):
        return DownloadError(SOURCE_UNREACHABLE, f"TLS with {ref.registry} failed: certificate not trusted?")
    if isinstance(error, requests.RequestException):
        return DownloadError(
            SOURCE_UNREACHABLE, f"cannot reach registry {ref.registry}: {type(error).__name__}"
        )
    return DownloadError(DOWNLOAD_FAILED, f"listing {SCHEME}{ref.name} failed: {type(error).__name__}")


def list_oci(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing:
    """Resolve the manifest (verified against a pinned digest), choose its files, and list them
    as blob URLs the transfer fetches with the registry's credentials (blocking: run in a thread)."""
    ref = parse_oci(parsed.uri)
    registry = _Registry(ref, env, policy)
    container = registry.get_container(f"{ref.repository}:{ref.tag or 'latest'}")
    if ref.digest:
        container.digest = ref.digest
    try:
        manifest = registry.get_manifest(
            container, allowed_media_type=[OCI_MANIFEST, DOCKER_MANIFEST, *INDEXES]
        )
    except DownloadError:
        raise
    except json.JSONDecodeError:
        raise DownloadError(INVALID_SOURCE, f"{parsed.uri}: the manifest is not JSON") from None
    except Exception as e:
        raise _failure(e, ref) from e
    response = registry.response
    assert response is not None
    body = response.content
    if len(body) > MAX_MANIFEST:
        raise DownloadError(INVALID_SOURCE, f"{parsed.uri}: the manifest is larger than {MAX_MANIFEST} bytes")
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    if ref.digest is not None and digest != ref.digest:
        raise DownloadError(
            CHECKSUM_MISMATCH, f"{parsed.uri}: the registry sent a manifest whose digest is {digest}"
        )
    blobs = select_blobs(manifest, response.headers.get("Content-Type", ""), parsed.uri)
    files = tuple(
        RemoteFile(
            blob.path,
            blob.size,
            f"{registry.prefix}://{container.get_blob_url(blob.digest)}",
            digests=(Digest("sha256", blob.digest.removeprefix("sha256:")),),
            etag=blob.digest,
            signer=registry.signer,
        )
        for blob in blobs
    )
    return Listing(source=parsed.uri, revision=digest, files=files, tls_verify=registry.verify)
