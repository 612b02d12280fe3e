"""Derived names of the objects the operator creates (docs/original.md#derived-names, the
original's ``internal/utils/naming.go``), reproduced bit for bit so names match the Go operator's.

1. Each name part is made RFC-1123-ish: lower case, every character outside ``[a-z0-9-]`` becomes
   ``-``, ``-`` trimmed at both ends, cut to 63, trailing ``-`` trimmed again; an empty part
   becomes ``part``.
2. Optional hash suffix: each hash input is serialised as Go's ``encoding/json`` would (see
   :func:`go_json`), the results are joined with ``|``, hashed with SHA-256 and the first
   ``hash_length`` hex characters kept.
3. Parts are joined with ``-`` and ``-<hash>`` appended; while the name is longer than
   ``max_length``, the last character of the currently longest part (the first on ties) is dropped
   and that part's trailing ``-`` trimmed.

Example: ``derived_name(["aim-qwen-qwen3-32b", "0.8.5"], ["amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"])``
is ``aim-qwen-qwen3-32b-0-8-5-cdc1fb22``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DNS_LABEL_MAX", "derived_name", "go_json", "label_value", "sanitize_part"]

DNS_LABEL_MAX = 63
DEFAULT_HASH_LENGTH = 8

_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9-]")
_INVALID_LABEL_CHARS = re.compile(r"[^a-z0-9._-]+")


def sanitize_part(part: str) -> str:
    """One name part made RFC-1123-ish (step 1)."""
    text = _INVALID_NAME_CHARS.sub("-", part.lower()).strip("-")
    text = text[:DNS_LABEL_MAX].rstrip("-")
    return text or "part"


def go_json(value: Any) -> str:
    """``value`` serialised like Go's ``json.Marshal``: no whitespace, non-ASCII kept, ``<``, ``>``
    and ``&`` (and U+2028/U+2029) escaped as ``\\u003c``..., map keys sorted, ``None`` → ``null``."""
    text = json.dumps(_sorted(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_sorted(v) for v in value]
    return value


def name_hash(inputs: Sequence[Any], length: int = DEFAULT_HASH_LENGTH) -> str:
    """The hash suffix of step 2."""
    joined = "|".join(go_json(v) for v in inputs)
    return hashlib.sha256(joined.encode()).hexdigest()[:length]


def derived_name(
    parts: Sequence[str],
    hash_inputs: Sequence[Any] | None = None,
    *,
    hash_length: int = DEFAULT_HASH_LENGTH,
    max_length: int = DNS_LABEL_MAX,
) -> str:
    """A name from ``parts`` with an optional hash of ``hash_inputs``, at most ``max_length`` long."""
    clean = [sanitize_part(p) for p in parts] or ["part"]
    suffix = f"-{name_hash(hash_inputs, hash_length)}" if hash_inputs is not None else ""

    def joined() -> str:
        return "-".join(clean) + suffix

    while len(joined()) > max_length:
        longest = max(range(len(clean)), key=lambda i: (len(clean[i]), -i))
        if not clean[longest]:
            break  # nothing left to shorten
        clean[longest] = clean[longest][:-1].rstrip("-")
    return joined()


def label_value(text: str) -> str:
    """A label value derived from a name: lower case, runs of characters outside ``[a-z0-9._-]``
    become ``_``, ``_.-`` trimmed at both ends, cut to 63 (and trimmed again so the value stays
    valid)."""
    value = _INVALID_LABEL_CHARS.sub("_", text.lower()).strip("_.-")
    return value[:DNS_LABEL_MAX].strip("_.-")
