"""Image references: ``[registry[:port]/]repository[:tag][@digest]``, with Docker's defaults.

The grammar is the one of ``github.com/distribution/reference``: the first path component is a
registry when it contains a ``.`` or a ``:`` or is ``localhost`` (or is an IPv6 literal in
brackets); otherwise the image is on Docker Hub (``docker.io``), where a single-component name
gets ``library/``. ``index.docker.io`` and ``registry-1.docker.io`` are spelled ``docker.io``.

Stricter than that grammar where it would let a mistake through to a Pod: whitespace anywhere
(a trailing newline from a YAML block scalar included) is an error rather than trimmed, and a
registry port must be 1-65535.

Part of the API layer: the CRD models validate their image fields with it
(:data:`aimcore.api.crds.base.ImageReference`), as the registry client
(:mod:`aimcore.domain.oci`) and the kubelet will read them.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, replace

from aimcore.api.errors import AimError

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
DOCKER_HUB_ALIASES = frozenset(
    {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
)
DEFAULT_TAG = "latest"
MAX_NAME_LENGTH = 255

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_RE = re.compile(
    rf"^(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:.]+\])(?::(?P<port>[0-9]{{1,5}}))?$"
)
MAX_PORT = 65535
_PATH_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG_RE = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$")
_SHA256_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


class InvalidReference(AimError, ValueError):
    """An image reference (or registry / repository name) that cannot be parsed; the message says
    why. Only a new spec helps."""

    reason = "InvalidImageReference"
    transient = False


@dataclass(frozen=True)
class ImageReference:
    """A parsed image reference. ``registry`` is a host (with port), ``repository`` the path."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        """``registry/repository`` (no tag, no digest)."""
        return f"{self.registry}/{self.repository}"

    @property
    def reference(self) -> str:
        """What goes after ``/manifests/``: the digest if pinned, else the tag (``latest`` by default)."""
        return self.digest or self.tag or DEFAULT_TAG

    @property
    def api_host(self) -> str:
        """The host the distribution API is served on (``registry-1.docker.io`` for Docker Hub)."""
        return api_host(self.registry)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.registry)

    def with_tag(self, tag: str) -> ImageReference:
        if not _TAG_RE.fullmatch(tag):
            raise InvalidReference(f"invalid tag {tag!r}")
        return replace(self, tag=tag, digest=None)

    def with_digest(self, digest: str) -> ImageReference:
        _check_digest(digest, digest)
        return replace(self, digest=digest)

    def __str__(self) -> str:
        out = self.name
        if self.tag:
            out += f":{self.tag}"
        if self.digest:
            out += f"@{self.digest}"
        return out


def parse_reference(text: str, *, default_tag: str | None = None) -> ImageReference:
    """Parse ``[registry[:port]/]repository[:tag][@digest]``.

    ``default_tag`` fills the tag when neither a tag nor a digest is given (the tag stays ``None``
    otherwise; :attr:`ImageReference.reference` still means ``latest``).
    Raises :class:`InvalidReference` with the reason in the message.
    """
    if not isinstance(text, str):
        raise InvalidReference(f"image reference must be a string, not {type(text).__name__}")
    original = text
    if not text.strip():
        raise InvalidReference("image reference is empty")
    if any(c.isspace() for c in text):
        raise InvalidReference(f"image reference {original!r} contains whitespace")
    if "://" in text:
        raise InvalidReference(f"image reference {original!r} must not contain a URL scheme")

    digest: str | None = None
    if "@" in text:
        text, digest = text.split("@", 1)
        _check_digest(digest, original)

    tag: str | None = None
    slash = text.rfind("/")
    colon = text.rfind(":")
    if colon > slash:
        text, tag = text[:colon], text[colon + 1 :]
        if not _TAG_RE.fullmatch(tag):
            raise InvalidReference(f"image reference {original!r} has an invalid tag {tag!r}")

    registry, repository = split_registry(text, original)
    if len(f"{registry}/{repository}") > MAX_NAME_LENGTH:
        raise InvalidReference(f"image reference {original!r} is longer than {MAX_NAME_LENGTH} characters")
    if tag is None and digest is None:
        tag = default_tag
    return ImageReference(registry, repository, tag, digest)


def parse_repository(registry: str, repository: str) -> ImageReference:
    """A reference to ``repository`` on ``registry`` without tag (for listing tags)."""
    host = normalize_registry(registry)
    repo = check_repository(repository, f"{registry}/{repository}")
    return ImageReference(host, repo)


PULL_ALWAYS = "Always"
PULL_IF_NOT_PRESENT = "IfNotPresent"


def pull_policy(image: str | None) -> str:
    """The ``imagePullPolicy`` the operator writes for ``image`` (the released original's rule,
    0.2.5, which is Kubernetes' own default written out): no image, no tag or ``:latest`` →
    ``Always`` (a moving tag is looked up each time a pod starts); any other tag, and any digest →
    ``IfNotPresent`` (the content a node has is the content asked for). A reference that cannot be
    parsed gets ``IfNotPresent``: the kubelet refuses it whatever the policy, and says why."""
    if not image:
        return PULL_ALWAYS
    try:
        ref = parse_reference(image)
    except InvalidReference:
        return PULL_IF_NOT_PRESENT
    if ref.digest is None and ref.tag in (None, DEFAULT_TAG):
        return PULL_ALWAYS
    return PULL_IF_NOT_PRESENT


def split_registry(name: str, original: str | None = None) -> tuple[str, str]:
    """``name`` (no tag/digest) → (registry, repository) with Docker Hub defaults applied."""
    shown = original if original is not None else name
    first, sep, rest = name.partition("/")
    if sep and _looks_like_registry(first):
        _check_host(first, f"image reference {shown!r} has an invalid registry {first!r}")
        registry = first.lower()
        repository = rest
    else:
        registry = DOCKER_HUB
        repository = name
    if registry in DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
    repository = check_repository(repository, shown)
    if registry == DOCKER_HUB and "/" not in repository:
        repository = f"library/{repository}"
    return registry, repository


def check_repository(repository: str, shown: str) -> str:
    if not repository:
        raise InvalidReference(f"image reference {shown!r} has no repository")
    for component in repository.split("/"):
        if not _PATH_COMPONENT_RE.fullmatch(component):
            problem = "must be lower case" if component.lower() != component else "is not valid"
            raise InvalidReference(f"image reference {shown!r}: repository component {component!r} {problem}")
    return repository


def normalize_registry(host: str) -> str:
    """A registry host as the references spell it: no scheme, no path, lower case, Docker Hub
    aliases → ``docker.io``. Raises :class:`InvalidReference` for something that is not a host."""
    text = host
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0].lower()
    _check_host(text, f"invalid registry host {host!r}")
    return DOCKER_HUB if text in DOCKER_HUB_ALIASES else text


def _check_host(host: str, problem: str) -> None:
    """``host[:port]`` as a registry: a valid name or IP literal, a port of 1-65535."""
    match = _DOMAIN_RE.fullmatch(host) if host and not any(c.isspace() for c in host) else None
    if match is None:
        raise InvalidReference(problem)
    port = match["port"]
    if port is not None and not 1 <= int(port) <= MAX_PORT:
        raise InvalidReference(f"{problem}: port {int(port)} is not in 1-{MAX_PORT}")


def api_host(registry: str) -> str:
    return DOCKER_HUB_API if registry == DOCKER_HUB else registry


def hostname(registry: str) -> str:
    """The host part of ``host[:port]`` (brackets of an IPv6 literal removed)."""
    if registry.startswith("["):
        return registry[1 : registry.index("]")]
    return registry.rsplit(":", 1)[0] if ":" in registry else registry


def is_loopback(registry: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1`` (with or without a port)."""
    host = hostname(registry).lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _looks_like_registry(first: str) -> bool:
    # distribution/reference also takes an upper-case first component for a registry; here it is
    # read as a (then invalid, upper-case) Docker Hub namespace, which gives the clearer error.
    return "." in first or ":" in first or first == "localhost" or first.startswith("[")


def _check_digest(digest: str, shown: str) -> None:
    if not _DIGEST_RE.fullmatch(digest) or (
        digest.startswith("sha256:") and not _SHA256_RE.fullmatch(digest)
    ):
        raise InvalidReference(f"image reference {shown!r} has an invalid digest {digest!r}")
