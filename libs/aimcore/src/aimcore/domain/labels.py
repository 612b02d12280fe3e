"""The labels on AIM objects that more than one service writes or reads: which model a template is
for, and whether the operator made an object (``auto-generated``) or a user did. The labels every
child carries (part-of, managed-by) are :mod:`aimcore.runtime.children`'s."""

from __future__ import annotations

__all__ = ["AUTO_GENERATED", "MODEL_LABEL", "ORIGIN_LABEL"]

MODEL_LABEL = "aim.eai.amd.com/model"
"""On a template a model made: the model's name (as a label value)."""
ORIGIN_LABEL = "aim.eai.amd.com/origin"
"""Who made the object: :data:`AUTO_GENERATED` for the operator (models for images, templates for
models), ``derived`` for a service's override template; users' objects have none."""
AUTO_GENERATED = "auto-generated"
