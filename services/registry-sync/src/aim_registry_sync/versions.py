"""Version constraints for image tags (``AIMClusterModelSource`` filters).

Why this module exists: ``AIMClusterModelSourceSpec.versions`` and ``ModelSourceFilter.versions`` select
image tags with semver constraints such as ``>=1.0.0``, ``~1.2.0`` or ``^1.0.0``. The ``semver`` package
parses and orders versions but has no range syntax, so the npm-style range grammar lives here, on top
of :class:`semver.Version`.

Grammar (npm ``node-semver`` ranges):

* comparators ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (``!=`` kept for compatibility with the
  original operator's blang/semver ranges; full versions only), optionally followed by whitespace;
* space-separated comparators are ANDed, ``||`` ORs comparator sets;
* x-ranges ``*``, ``1.x``, ``1.2.*`` and partial versions (``1``, ``1.2``), also after an operator
  (``>=1.2`` is ``>=1.2.0``, ``<=1.2`` is ``<1.3.0-0``, ``>1`` is ``>=2.0.0``);
* caret ``^1.2.3`` (``>=1.2.3 <2.0.0-0``, ``^0.2.3`` → ``<0.3.0-0``, ``^0.0.3`` → ``<0.0.4-0``),
  tilde ``~1.2.3`` / ``~>1.2.3`` (``>=1.2.3 <1.3.0-0``), hyphen ranges ``1.2.3 - 2.3.4``;
* an optional ``v`` before a version (``>=v1.0.0``).

Deliberate choices (the seed CRD docs and the reference notes drive them):

* **Tags must be strict semver** after dropping one leading ``v``; partial tags are *not* coerced
  (``1.0``, ``latest``, ``dev`` → :func:`parse_version` returns ``None`` and :meth:`Range.matches_tag`
  is ``False``). Seed: "Only tags that parse as valid semver are considered (including prereleases
  like 0.8.1-rc1)" and "Non-semver tags (e.g., "latest", "dev") are silently skipped". Deciding that
  an *empty* constraint list matches every tag, non-semver ones included ("Leave empty to match all
  tags"), is up to the caller: there is no empty :class:`Range`.
* **Prereleases compare by semver precedence**, not by npm's "only if a comparator shares the
  [major, minor, patch] tuple" rule. Seed: "0.8.1-rc1 matches ">=0.8.0" (prerelease is part of
  version 0.8.1)" and "Use ">=0.8.1-rc1" to match only that prerelease or higher". So ``*`` matches
  every semver tag including prereleases, and ``>=1.0.0`` does not match ``1.0.0-rc1``.
* **An exclusive upper bound excludes the prereleases of that bound**: ``<1.0.0`` is read as
  ``<1.0.0-0`` (shown that way by ``str``), so ``>=0.8.0 <1.0.0`` does not match ``1.0.0-rc1`` - a
  release candidate of 1.0.0 is "part of version 1.0.0" in the seed's words, and this is how npm
  desugars the upper bounds of ``^``, ``~`` and x-ranges anyway. Write ``<1.0.0-rc2`` to bound
  within prereleases. Lower bounds are never widened: ``1.2.x`` does not match ``1.2.0-rc1``.
* **Invalid constraints raise** :class:`InvalidRange`. The original operator silently ignored
  constraints it could not parse - which included every ``^``/``~`` constraint the CRD docs advertise,
  because blang/semver has no caret or tilde - so such a filter matched every semver tag.
* **Partial versions follow npm**: a bare ``1.2`` means ``1.2.x``, where the original appended ``.0``
  and matched only ``1.2.0``; ``>=1.2`` means ``>=1.2.0`` in both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import semver

from aimcore.api.errors import AimError

__all__ = ["Comparator", "InvalidRange", "Operator", "Range", "parse_version"]

Operator = Literal["=", "!=", "<", "<=", ">", ">="]


class InvalidRange(AimError, ValueError):
    """A version constraint that cannot be parsed (or could never match anything); reported as its
    filter's ``InvalidFilter``."""

    reason = "InvalidFilter"
    transient = False


def parse_version(tag: str) -> semver.Version | None:
    """The strict semver version an image tag names, or ``None`` for non-semver tags.

    One leading ``v`` is dropped (``v0.8.5`` → 0.8.5); nothing else is coerced, so ``1.0``, ``latest``
    and ``01.2.3`` give ``None``. Prereleases and build metadata are kept (``0.8.1-rc1``).
    """
    text = tag[1:] if tag.startswith("v") else tag
    try:
        return semver.Version.parse(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class Comparator:
    """One primitive comparison against a full version, e.g. ``>=1.2.3``."""

    op: Operator
    version: semver.Version

    def matches(self, version: semver.Version) -> bool:
        """Whether ``version`` satisfies this comparator (semver precedence, build metadata ignored)."""
        cmp = version.compare(self.version)
        match self.op:
            case "=":
                return cmp == 0
            case "!=":
                return cmp != 0
            case "<":
                return cmp < 0
            case "<=":
                return cmp <= 0
            case ">":
                return cmp > 0
            case ">=":
                return cmp >= 0

    def __str__(self) -> str:
        return f"{'' if self.op == '=' else self.op}{self.version}"


@dataclass(frozen=True)
class Range:
    """A union (``||``) of comparator sets; a set matches when all its comparators do.

    An empty comparator set is ``*`` (any semver version, prereleases included).
    """

    alternatives: tuple[tuple[Comparator, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Range:
        """Parse an npm-style range; raises :class:`InvalidRange` naming the offending part."""
        if not text.strip():
            raise InvalidRange("empty version range")
        alternatives: list[tuple[Comparator, ...]] = []
        for part in text.split("||"):
            if not part.strip():
                raise InvalidRange(f"empty alternative in version range {text!r}")
            alternatives.append(tuple(_parse_set(part.strip(), text)))
        return cls(tuple(alternatives))

    def matches(self, version: semver.Version) -> bool:
        """Whether ``version`` satisfies the range."""
        return any(all(c.matches(version) for c in comparators) for comparators in self.alternatives)

    def matches_tag(self, tag: str) -> bool:
        """Whether an image tag satisfies the range; non-semver tags (see :func:`parse_version`) never do."""
        version = parse_version(tag)
        return version is not None and self.matches(version)

    def __str__(self) -> str:
        return " || ".join(" ".join(map(str, cs)) or "*" for cs in self.alternatives)


# --- parsing -----------------------------------------------------------------------------------------

_NUM = r"0|[1-9]\d*"
_PART = rf"{_NUM}|[xX*]"
_IDENT = r"[0-9A-Za-z-]+"
_PARTIAL = re.compile(
    rf"v?(?P<major>{_PART})(?:\.(?P<minor>{_PART})(?:\.(?P<patch>{_PART})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?(?:\+(?P<build>{_IDENT}(?:\.{_IDENT})*))?)?)?"
)
_TOKEN = re.compile(r"(?P<op>\^|~>?|[<>]=?|!=|=)?(?P<version>.*)")
_OP_SPACE = re.compile(r"(\^|~>?|[<>]=?|!=|=)\s+")
_HYPHEN = re.compile(r"(?P<low>\S+)\s+-\s+(?P<high>\S+)")
_OPERATORS: dict[str, Operator] = {"=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _Partial(NamedTuple):
    """A possibly partial version: ``None`` components were omitted or written as ``x``/``*``."""

    major: int | None
    minor: int | None
    patch: int | None
    version: semver.Version | None  # the full version, when major, minor and patch are all given

    def floor(self) -> semver.Version:
        """The lowest version it covers (missing components as 0)."""
        return self.version or semver.Version(self.major or 0, self.minor or 0, self.patch or 0)

    def ceiling(self) -> semver.Version:
        """The first version past a partial one: 1 → 2.0.0, 1.2 → 1.3.0."""
        assert self.major is not None and self.patch is None
        if self.minor is None:
            return semver.Version(self.major + 1, 0, 0)
        return semver.Version(self.major, self.minor + 1, 0)


def _below(version: semver.Version) -> Comparator:
    """Exclusive upper bound that also excludes the bound's prereleases (``<2.0.0-0``)."""
    if version.prerelease is None:
        version = semver.Version(version.major, version.minor, version.patch, "0")
    return Comparator("<", version)


def _parse_partial(text: str, token: str) -> _Partial:
    m = _PARTIAL.fullmatch(text)
    if m is None:
        raise InvalidRange(
            f"invalid version {text!r} in {token!r}" if text else f"missing version in {token!r}"
        )
    parts: list[int | None] = [
        None if p is None or p in "xX*" else int(p) for p in m.group("major", "minor", "patch")
    ]
    major, minor, patch = parts
    if (major is None and minor is not None) or (minor is None and patch is not None):
        raise InvalidRange(
            f"invalid version {text!r} in {token!r}: a wildcard must be followed by wildcards only"
        )
    if patch is None:
        if m["pre"] or m["build"]:
            raise InvalidRange(f"invalid version {text!r} in {token!r}: prerelease needs a full version")
        return _Partial(major, minor, None, None)
    try:
        version = semver.Version.parse(text.removeprefix("v"))
    except ValueError as exc:
        raise InvalidRange(f"invalid version {text!r} in {token!r}") from exc
    return _Partial(major, minor, patch, version.replace(build=None))  # build never affects precedence


def _parse_set(part: str, text: str) -> list[Comparator]:
    hyphen = _HYPHEN.fullmatch(part)
    if hyphen:
        low = _parse_partial(hyphen["low"], part)
        high = _parse_partial(hyphen["high"], part)
        out: list[Comparator] = [] if low.major is None else [Comparator(">=", low.floor())]
        if high.version is not None:
            out.append(Comparator("<=", high.version))
        elif high.major is not None:
            out.append(_below(high.ceiling()))
        return out
    comparators: list[Comparator] = []
    for token in _OP_SPACE.sub(r"\1", part).split():
        comparators.extend(_parse_comparator(token))
    return comparators


def _parse_comparator(token: str) -> Sequence[Comparator]:
    m = _TOKEN.fullmatch(token)
    assert m is not None  # the version group accepts anything
    op, p = m["op"] or "=", _parse_partial(m["version"], token)
    if op == "^":
        return _caret(p)
    if op in ("~", "~>"):
        return _tilde(p)
    if p.major is None:  # `*` with an operator
        if op in ("=", ">=", "<="):
            return []
        raise InvalidRange(f"{token!r} can never match")
    if p.version is not None:
        if op == "<":
            return [_below(p.version)]
        return [Comparator(_OPERATORS[op], p.version)]
    match op:
        case ">=":
            return [Comparator(">=", p.floor())]
        case ">":
            return [Comparator(">=", p.ceiling())]
        case "<":
            return [_below(p.floor())]
        case "<=":
            return [_below(p.ceiling())]
        case "=":
            return [Comparator(">=", p.floor()), _below(p.ceiling())]
    raise InvalidRange(f"{token!r}: {op} needs a full version")


def _caret(p: _Partial) -> list[Comparator]:
    """``^`` allows changes that keep the left-most non-zero component (of those given)."""
    if p.major is None:
        return []
    if p.major > 0 or p.minor is None:
        upper = semver.Version(p.major + 1, 0, 0)
    elif p.minor > 0 or p.patch is None:
        upper = semver.Version(0, p.minor + 1, 0)
    else:
        upper = semver.Version(0, 0, p.patch + 1)
    return [Comparator(">=", p.floor()), _below(upper)]


def _tilde(p: _Partial) -> list[Comparator]:
    """``~`` allows patch changes when a minor is given, minor changes otherwise."""
    if p.major is None:
        return []
    upper = semver.Version(p.major + 1, 0, 0) if p.minor is None else semver.Version(p.major, p.minor + 1, 0)
    return [Comparator(">=", p.floor()), _below(upper)]
