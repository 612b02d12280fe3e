"""``oci://REGISTRY/REPO:TAG`` and ``oci://REGISTRY/REPO@sha256:…`` model sources: a model pushed to
a container registry as an OCI artifact, its manifest resolved by the operator's registry client
(:class:`aimcore.domain.oci.BlockingRegistryClient`: the distribution API and the token exchange
discovery and registry-sync use too) and listed as blobs for the one transfer engine (ranged,
resumable, progress offered, every byte hashed).

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
by digest against that digest. The client's every connection applies the outbound policy
(redirects and the token realm included; the policy's forward proxy where it applies), one request
per call with no retry loop (the operator's attempts have their own backoff), credentials from the
pull secrets only (never a ``~/.docker`` file), sent to a token realm only over HTTPS or on the
registry's host; each blob request carries the registry's current credentials (a token renewed
when it expires).

Credentials come from the model's env: ``OCI_USERNAME``/``OCI_PASSWORD``, ``OCI_DOCKERCONFIGJSON``
(a ``.dockerconfigjson``), and ``AIM_OCI_PULL_SECRET_<n>`` (the cache's ``imagePullSecrets``, added
by the cache service), matched to the registry as the kubelet matches pull secrets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aim_cache_jobs.contract import PULL_SECRET_ENV
from aim_cache_jobs.downloader.errors import (
    ADDRESS_NOT_ALLOWED,
    AUTH_ERROR,
    CHECKSUM_MISMATCH,
    DOWNLOAD_FAILED,
    INVALID_SOURCE,
    SOURCE_NOT_FOUND,
    SOURCE_UNREACHABLE,
    UNSUPPORTED_MEDIA_TYPE,
    DownloadError,
)
from aim_cache_jobs.downloader.fetch import make_ssl_context
from aim_cache_jobs.downloader.listing import Digest, Listing, RemoteFile, validate_path
from aim_cache_jobs.downloader.sourceuri import ParsedSource, tls_verify, truthy
from aimcore.api.imageref import ImageReference, parse_reference
from aimcore.api.sourcerules import source_uri_error
from aimcore.domain.oci import (
    OCI_ERRORS,
    AddressNotAllowed,
    AuthFailed,
    BlockingRegistryClient,
    Credentials,
    DigestMismatch,
    DockerConfig,
    ImageNotFound,
    InsecureTokenRealm,
    InvalidDocument,
    RegistryUnreachable,
    parse_dockerconfigjson,
)
from aimcore.domain.oci.errors import CredentialsError
from aimcore.domain.outbound import OutboundPolicy

SCHEME = "oci://"
GGUF = "application/vnd.docker.ai.gguf.v3"
LICENSE = "application/vnd.docker.ai.license"
MODEL_CONFIG = "application/vnd.docker.ai.model.config.v0.1+json"
MODEL_CONFIG_PREFIX = "application/vnd.docker.ai.model.config"
TITLE = "org.opencontainers.image.title"
UNPACK = "io.deis.oras.content.unpack"  # ORAS's mark of a directory packed as one layer
PACKED_DIRECTORY = "application/vnd.oci.image.layer.v1.tar+gzip"  # ORAS's media type for one
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = frozenset(
    {"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"}
)
CONFIG_FILE = "docker-model-config.json"
USERNAME_ENV, PASSWORD_ENV = "OCI_USERNAME", "OCI_PASSWORD"
DOCKERCONFIG_ENV = "OCI_DOCKERCONFIGJSON"
PLAIN_HTTP_ENV = "OCI_PLAIN_HTTP"


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
            if notes.get(UNPACK) or (TITLE in notes and mt == PACKED_DIRECTORY):
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
# I/O: the registry through the operator's client
# ---------------------------------------------------------------------------------------------


def list_oci(parsed: ParsedSource, env: Mapping[str, str], policy: OutboundPolicy) -> Listing:
    """Resolve the manifest (verified against a pinned digest), choose its files, and list them
    as blob URLs the transfer fetches with the registry's credentials (blocking: run in a thread)."""
    ref = parse_oci(parsed.uri)
    creds = credentials(env, ref)
    verify = tls_verify(ParsedSource(uri=SCHEME, scheme="oci"), env)
    registry = BlockingRegistryClient(
        DockerConfig.single(ref.registry, creds.username, creds.password) if creds else None,
        plain_http=(ref.registry,) if truthy(env.get(PLAIN_HTTP_ENV)) else (),
        context=make_ssl_context(verify),
        policy=policy,
    )
    try:
        manifest = registry.manifest(ref)
    except OCI_ERRORS as e:
        raise _failure(e, parsed.uri, creds) from None
    except Exception as e:  # a bug or an unexpected library error: named, never a secret
        raise DownloadError(DOWNLOAD_FAILED, f"listing {parsed.uri} failed: {type(e).__name__}") from e
    blobs = select_blobs(manifest.content, manifest.media_type, parsed.uri)

    def signer(method: str, url: str, headers: Mapping[str, str]) -> dict[str, str]:
        """The registry's current credentials for one blob request."""
        try:
            authorization = registry.authorization(ref)
        except OCI_ERRORS as e:
            raise _failure(e, parsed.uri, creds) from None
        return {**headers, **({"Authorization": authorization} if authorization else {})}

    files = tuple(
        RemoteFile(
            blob.path,
            blob.size,
            registry.blob_url(ref, blob.digest),
            digests=(Digest("sha256", blob.digest.removeprefix("sha256:")),),
            etag=blob.digest,
            signer=signer,
        )
        for blob in blobs
    )
    return Listing(source=parsed.uri, revision=manifest.digest, files=files, tls_verify=verify)


def _failure(error: Exception, uri: str, creds: Credentials | None) -> DownloadError:
    """The download reason of what the registry client raised."""
    if isinstance(error, AddressNotAllowed):
        return DownloadError(ADDRESS_NOT_ALLOWED, error.message, transient=False)
    if isinstance(error, InsecureTokenRealm):
        return DownloadError(error.reason, error.message, transient=False)
    if isinstance(error, ImageNotFound):
        return DownloadError(SOURCE_NOT_FOUND, error.message)
    if isinstance(error, AuthFailed):
        given = "the credentials were refused" if creds else "it needs credentials and none were given"
        detail = f"HTTP {error.status}" if error.status else error.message
        return DownloadError(AUTH_ERROR, f"{uri}: {given} ({detail})")
    if isinstance(error, RegistryUnreachable):
        return DownloadError(SOURCE_UNREACHABLE, error.message)
    if isinstance(error, DigestMismatch):
        return DownloadError(CHECKSUM_MISMATCH, error.message)
    if isinstance(error, InvalidDocument):
        return DownloadError(INVALID_SOURCE, error.message)
    return DownloadError(DOWNLOAD_FAILED, str(error))
