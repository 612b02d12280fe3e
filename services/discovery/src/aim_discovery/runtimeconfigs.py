"""Runtime configs get a status of their own (the original leaves it empty): whether the config is
usable, and for a namespace config whether it is merged over a cluster config of the same name.

Checks are the ones that would otherwise surface only later on some service: routing enabled
without a ``gatewayRef``, a path template that no service can render (unbalanced braces, an
unsupported JSONPath expression, a literal segment over 63 characters:
:func:`aimcore.domain.pathtemplate.check_template`), an ``AIM_ENGINE_ARGS`` env value that is not a JSON
object, label propagation enabled with nothing to match or with a malformed glob
(:func:`aimcore.domain.runtimeconfig.glob_error`). Such a config is ``Ready=False/InvalidConfig`` with the
problems listed; consumers still resolve it (their own conditions say what fails for them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aimcore.api.bus.messages import ConditionReport
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.pathtemplate import check_template, quote_template
from aimcore.domain.runtimeconfig import ENGINE_ARGS, glob_error, migrate_deprecated
from aimcore.runtime import Request, Result

READY = "Ready"
CONFIG_VALID = "ConfigValid"
VALID = "ConfigValid"
INVALID = "InvalidConfig"


def problems(spec: Mapping[str, Any]) -> list[str]:
    found = []
    routing = spec.get("routing") if isinstance(spec.get("routing"), Mapping) else {}
    assert isinstance(routing, Mapping)
    if routing.get("enabled") and not routing.get("gatewayRef"):
        found.append("routing.enabled is true but routing.gatewayRef is not set")
    for key in ("pathTemplate", "routeTemplate"):  # routeTemplate: the legacy group's name
        template = routing.get(key)
        if isinstance(template, str) and (problem := check_template(template)) is not None:
            found.append(f"routing.{key} {quote_template(template)}: {problem}")
    for entry in spec.get("env") or []:
        if isinstance(entry, Mapping) and entry.get("name") == ENGINE_ARGS and entry.get("value"):
            try:
                ok = isinstance(json.loads(str(entry["value"])), dict)
            except ValueError:
                ok = False
            if not ok:
                found.append(f"env {ENGINE_ARGS} must be a JSON object")
    propagation = spec.get("labelPropagation")
    if isinstance(propagation, Mapping) and propagation.get("enabled") and not propagation.get("match"):
        found.append("labelPropagation.enabled is true but labelPropagation.match is empty")
    if isinstance(propagation, Mapping):
        for index, pattern in enumerate(propagation.get("match") or []):
            if (problem := glob_error(str(pattern))) is not None:
                found.append(f"labelPropagation.match[{index}]: {problem}")
    return found


async def reconcile(request: Request) -> Result | None:
    spec = migrate_deprecated(request.obj.get("spec") or {})
    found = problems(spec)
    name = request.name
    if request.ref.namespaced:
        cluster = request.informer.get(RuntimeConfig.kind(request.ref.group, cluster=True), None, name)
        scope = (
            f"merged over AIMClusterRuntimeConfig {name} (namespace values win)"
            if cluster is not None
            else "no AIMClusterRuntimeConfig of this name; used as is"
        )
    else:
        scope = "cluster-wide; namespace AIMRuntimeConfigs of the same name are merged over it"
    if found:
        message = "; ".join(found)
        conditions = [
            ConditionReport(type=CONFIG_VALID, status="False", reason=INVALID, message=message),
            ConditionReport(type=READY, status="False", reason=INVALID, message=message),
        ]
    else:
        conditions = [
            ConditionReport(type=CONFIG_VALID, status="True", reason="ConfigurationValid"),
            ConditionReport(type=READY, status="True", reason=VALID, message=f"Valid; {scope}"),
        ]
    if await request.reporter.report(request.ref, request.obj, conditions):
        await request.reporter.decide(
            request.ref, request.obj, "validate", conditions[-1].reason, conditions[-1].message or ""
        )
    return None
