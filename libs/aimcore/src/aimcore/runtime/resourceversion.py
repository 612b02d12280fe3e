"""Ordering of Kubernetes resourceVersions, for readers of the KV mirror
(docs/design.md#the-object-mirror)."""

from __future__ import annotations


def rv_int(rv: str | None) -> int:
    """resourceVersions are opaque in general but etcd's are integers; order by them."""
    try:
        return int(rv or 0)
    except ValueError:
        return 0
