"""The one spelling of an object as the API server sends it: decoded JSON."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
"""A Kubernetes object (or any JSON object within one), as decoded from the API server or the
mirror. Typed access goes through the CRD models (:mod:`aimcore.api.crds`)."""
