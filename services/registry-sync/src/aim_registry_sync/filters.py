"""Pure filter logic of AIMClusterModelSource: parsing filters, matching repositories and tags,
ordering candidates, planning creations under ``maxModels``, and Go duration strings.

Semantics (``ModelSourceFilter`` / ``AIMClusterModelSourceSpec``, docs/specification.md#modelsourcefilter;
docs/original.md#model-source-filters):

- A filter's ``image`` is ``[registry/]repository[:tag]``. The first path component is a registry
  when it contains ``.`` or ``:`` or is ``localhost``; an explicit registry overrides
  ``spec.registry`` for that filter. ``*`` in the repository matches any sequence of characters
  (``/`` included). A tag (after the last ``/``) is an exact tag and overrides version constraints.
- ``exclude``: exact repository names (the registry is not compared).
- Version constraints: the filter's ``versions`` if non-empty, else ``spec.versions``. A tag must
  satisfy **every** constraint of the list (AND, as the original); with constraints, non-semver tags
  (``latest``) never match; without constraints every tag matches. A constraint that does not
  parse makes the whole source invalid (``InvalidFilter``) - the original silently ignored it.
- Filters are ORed; an image matched by several filters counts once.

Ordering (what ``maxModels`` keeps when it cuts): filters in spec order; within a filter,
repositories in ascending name order; within a repository, semver tags newest first (semver
precedence), then non-semver tags in ascending order. Duplicates keep their first position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import semver

from aim_registry_sync.versions import InvalidRange, Range, parse_version
from aimcore.api.crds.aim import AIMClusterModelSourceSpec, ModelSourceFilter
from aimcore.api.errors import AimError
from aimcore.api.imageref import DOCKER_HUB, InvalidReference, check_repository, normalize_registry
from aimcore.api.kinds import GROUP_AIM
from aimcore.domain.families.models import Model
from aimcore.domain.labels import AUTO_GENERATED, ORIGIN_LABEL
from aimcore.domain.naming import derived_name

DEFAULT_SYNC_INTERVAL = 3600.0
MODEL_NAME_HASH_LENGTH = 6

_TAG_RE = re.compile(r"^[\w][\w.-]{0,127}$")


INVALID_FILTER = "InvalidFilter"


class InvalidFilter(AimError, ValueError):
    """A source spec that cannot be synced as written (the message names the offending field)."""

    reason = INVALID_FILTER
    transient = False


# ---------------------------------------------------------------------------------------------
# filters
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filter:
    """One parsed ``ModelSourceFilter`` (``index`` is its position in ``spec.filters``)."""

    index: int
    image: str
    registry: str  # the registry it lists (override, else spec.registry), normalized
    repository: str  # exact repository, or a pattern with '*'
    tag: str | None = None
    exclude: frozenset[str] = frozenset()
    constraints: tuple[Range, ...] = ()
    _regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @property
    def wildcard(self) -> bool:
        return "*" in self.repository

    def matches_repository(self, repository: str) -> bool:
        if repository in self.exclude:
            return False
        if self._regex is None:
            return repository == self.repository
        return self._regex.fullmatch(repository) is not None

    def matches_tag(self, tag: str) -> bool:
        if self.tag is not None:
            return tag == self.tag
        return all(c.matches_tag(tag) for c in self.constraints)

    def select_tags(self, tags: Iterable[str]) -> list[str]:
        """The matching tags, in the documented order."""
        return order_tags(t for t in tags if self.matches_tag(t))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` matches any sequence of characters; everything else is literal."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def glob_match(pattern: str, text: str) -> bool:
    return glob_regex(pattern).fullmatch(text) is not None


def _looks_like_registry(first: str) -> bool:
    return "." in first or ":" in first or first == "localhost" or first.startswith("[")


def parse_filter(
    spec_filter: ModelSourceFilter, index: int, default_registry: str, global_versions: Sequence[str] = ()
) -> Filter:
    where = f"filters[{index}]"
    text = spec_filter.image
    if not text.strip():
        raise InvalidFilter(f"{where}.image is empty")
    if any(c.isspace() for c in text):  # not trimmed: the same text names the models it creates
        raise InvalidFilter(f"{where}.image {text!r} contains whitespace")
    if "@" in text:
        raise InvalidFilter(f"{where}.image {text!r}: digests are not supported in filters, use a tag")
    if "://" in text:
        raise InvalidFilter(f"{where}.image {text!r} is not an image pattern")
    first, sep, rest = text.partition("/")
    registry = default_registry
    if sep and _looks_like_registry(first):
        try:
            registry = normalize_registry(first)
        except InvalidReference as exc:
            raise InvalidFilter(f"{where}.image: {exc}") from None
        text = rest
    tag: str | None = None
    slash, colon = text.rfind("/"), text.rfind(":")
    if colon > slash:
        text, tag = text[:colon], text[colon + 1 :]
        if not _TAG_RE.match(tag):
            raise InvalidFilter(f"{where}.image {spec_filter.image!r} has an invalid tag {tag!r}")
    try:
        # a pattern is checked as the repository it would be with every '*' standing for a letter
        check_repository(text.replace("*", "x"), spec_filter.image)
    except InvalidReference as exc:
        raise InvalidFilter(f"{where}.image: {exc}") from None
    versions = [v for v in (spec_filter.versions or []) if v.strip()] or [
        v for v in global_versions if v.strip()
    ]
    source = f"{where}.versions" if spec_filter.versions else "spec.versions"
    constraints: list[Range] = []
    if tag is None:
        for v in versions:
            try:
                constraints.append(Range.parse(v))
            except InvalidRange as exc:
                raise InvalidFilter(f"{source}: invalid version constraint {v!r}: {exc}") from None
    return Filter(
        index=index,
        image=spec_filter.image,
        registry=registry,
        repository=text,
        tag=tag,
        exclude=frozenset(spec_filter.exclude or ()),
        constraints=tuple(constraints),
        _regex=glob_regex(text) if "*" in text else None,
    )


def parse_filters(spec: AIMClusterModelSourceSpec) -> list[Filter]:
    """Every filter of the spec; raises :class:`InvalidFilter` on the first invalid one."""
    try:
        registry = normalize_registry(spec.registry or DOCKER_HUB)
    except InvalidReference as exc:
        raise InvalidFilter(f"spec.registry: {exc}") from None
    return [parse_filter(f, i, registry, spec.versions or ()) for i, f in enumerate(spec.filters)]


def order_tags(tags: Iterable[str]) -> list[str]:
    """Semver tags newest first (ties: by text), then non-semver tags in ascending order."""
    semver_tags: list[tuple[semver.Version, str]] = []
    others: list[str] = []
    for tag in dict.fromkeys(tags):
        version = parse_version(tag)
        if version is None:
            others.append(tag)
        else:
            semver_tags.append((version, tag))
    # newest first; equal precedence (v1.0.0 vs 1.0.0, build metadata) ordered by text
    semver_tags.sort(key=lambda vt: vt[1])
    semver_tags.sort(key=lambda vt: vt[0], reverse=True)
    return [t for _, t in semver_tags] + sorted(others)


# ---------------------------------------------------------------------------------------------
# images, names and the plan
# ---------------------------------------------------------------------------------------------

SOURCE_LABEL = "aim.eai.amd.com/model-source"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "aim-registry-sync"
REGISTRY_ANNOTATION = "aim.eai.amd.com/source-registry"
REPOSITORY_ANNOTATION = "aim.eai.amd.com/source-repository"
TAG_ANNOTATION = "aim.eai.amd.com/source-tag"


@dataclass(frozen=True)
class Image:
    registry: str
    repository: str
    tag: str

    @property
    def uri(self) -> str:
        """``repo:tag`` on Docker Hub (as users write it), else ``registry/repo:tag``."""
        if self.registry == DOCKER_HUB:
            return f"{self.repository}:{self.tag}"
        return f"{self.registry}/{self.repository}:{self.tag}"

    @property
    def model_name(self) -> str:
        """The original's name (docs/original.md#derived-names): parts [repository, tag], hash of
        registry, repository, tag (6 hex)."""
        return derived_name(
            [self.repository, self.tag],
            [self.registry, self.repository, self.tag],
            hash_length=MODEL_NAME_HASH_LENGTH,
        )


def model_body(image: Image, source_label: str, pull_secrets: Sequence[str]) -> dict[str, object]:
    """The AIMClusterModel a source creates for ``image``."""
    kind = Model.kind(GROUP_AIM, cluster=True)
    spec: dict[str, object] = {"image": image.uri}
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in pull_secrets]
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {
            "name": image.model_name,
            "labels": {
                SOURCE_LABEL: source_label,
                ORIGIN_LABEL: AUTO_GENERATED,
                MANAGED_BY_LABEL: MANAGED_BY,
            },
            "annotations": {
                REGISTRY_ANNOTATION: image.registry,
                REPOSITORY_ANNOTATION: image.repository,
                TAG_ANNOTATION: image.tag,
            },
        },
        "spec": spec,
    }


def unique(images: Iterable[Image]) -> list[Image]:
    """``images`` without repeats (by URI), first occurrence kept."""
    seen: set[str] = set()
    out: list[Image] = []
    for image in images:
        if image.uri not in seen:
            seen.add(image.uri)
            out.append(image)
    return out


@dataclass(frozen=True)
class Plan:
    """What one sync does: ``create`` in order; ``present`` already have a model of this source;
    ``over_limit`` match but would exceed ``maxModels``."""

    create: tuple[Image, ...]
    present: tuple[Image, ...]
    over_limit: tuple[Image, ...]


def plan(matched: Sequence[Image], existing_images: set[str], existing_count: int, max_models: int) -> Plan:
    """Create missing images in order while (existing + new) < ``max_models``; never delete."""
    create: list[Image] = []
    present: list[Image] = []
    over: list[Image] = []
    for image in unique(matched):
        if image.uri in existing_images:
            present.append(image)
        elif existing_count + len(create) < max_models:
            create.append(image)
        else:
            over.append(image)
    return Plan(tuple(create), tuple(present), tuple(over))


# ---------------------------------------------------------------------------------------------
# durations
# ---------------------------------------------------------------------------------------------

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str | None, default: float = DEFAULT_SYNC_INTERVAL) -> float:
    """Seconds of a Go duration string (``1h``, ``15m``, ``1h30m``, ``2.5s``, ``300ms``, ``0``);
    empty → ``default``. Raises :class:`InvalidFilter` for anything else or a negative value."""
    if text is None or not text.strip():
        return default
    s = text.strip()
    sign = 1.0
    if s[0] in "+-":
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    if not s:
        raise InvalidFilter(f"spec.syncInterval: invalid duration {text!r}")
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise InvalidFilter(f"spec.syncInterval: invalid duration {text!r} (e.g. 30m, 1h, 2h30m)")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if sign < 0 and total > 0:
        raise InvalidFilter(f"spec.syncInterval: duration {text!r} is negative")
    return total
