"""The Gateway API HTTPRoute of an AIMService (docs/original.md#routing).

:func:`plan_route` decides what the service's routing asks for, its own ``routing`` merged field by
field with the runtime config's: no route (routing off), a condition only (no gateway, a path
template or timeout that cannot be written, no hostnames on a gateway with several listeners), or the
route to apply. The path comes from
:mod:`aimcore.domain.pathtemplate` (rendered there, with an error instead of the
original's silent fallback to the default path). :func:`route_body` builds the HTTPRoute and
:func:`route_condition` reads its status for the ``HTTPRouteReady`` condition.
:func:`gateway_duration` writes ``requestTimeout`` (a Go duration: ``1.5h``, ``250us``) the way
the Gateway API accepts a duration (``1h30m``; at most four of ``h``/``m``/``s``/``ms``, each up to
five digits), so a valid AIMService never produces an HTTPRoute the API server refuses; one it
cannot express is an error, not rounded. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from aim_deployer.service_view import ServiceView
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.errors import AimError
from aimcore.api.kinds import HTTP_ROUTE
from aimcore.api.types import Obj
from aimcore.domain.families.base import written
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.naming import label_value
from aimcore.domain.pathtemplate import (
    DEFAULT_PATH_TEMPLATE,
    MAX_PATH,
    PathTemplateError,
    default_path,
    evaluate,
    quote_template,
    render_path,
)
from aimcore.runtime import condition, owner_reference

__all__ = [
    "DEFAULT_PATH_TEMPLATE",
    "MAX_PATH",
    "REASON_ACCEPTED",
    "REASON_CREATING",
    "REASON_HOSTNAME_REQUIRED",
    "REASON_PENDING",
    "REASON_REJECTED",
    "REASON_TIMEOUT_INVALID",
    "ROUTE_READY",
    "Obj",
    "PathTemplateError",
    "RequestTimeoutError",
    "RoutePlan",
    "default_path",
    "enabled",
    "evaluate",
    "gateway_duration",
    "gateway_to_read",
    "plan_route",
    "render_path",
    "route_body",
    "route_condition",
]


ROUTE_READY = "HTTPRouteReady"
SERVICE_LABEL = "aim.eai.amd.com/service"
REASON_CREATING = "HTTPRouteCreating"
REASON_ACCEPTED = "HTTPRouteAccepted"
REASON_REJECTED = "HTTPRouteRejected"
REASON_PENDING = "HTTPRoutePending"
REASON_TIMEOUT_INVALID = "RequestTimeoutInvalid"
REASON_HOSTNAME_REQUIRED = "RouteHostnameRequired"

BACKEND_PORT = 80

_GO_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNITS = {
    "ns": Fraction(1, 10**6),
    "us": Fraction(1, 1000),
    "µs": Fraction(1, 1000),
    "μs": Fraction(1, 1000),
    "ms": Fraction(1),
    "s": Fraction(1000),
    "m": Fraction(60_000),
    "h": Fraction(3_600_000),
}  # in milliseconds
_GATEWAY_UNITS = (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1))
_GATEWAY_MAX_FIELD = 99_999
_GATEWAY_DURATION = re.compile(r"([0-9]{1,5}(h|m|s|ms)){1,4}")


class RequestTimeoutError(AimError, ValueError):
    """``requestTimeout`` cannot be written as a Gateway API duration; the message says why."""

    reason = REASON_TIMEOUT_INVALID
    transient = False


def gateway_duration(text: str) -> str:
    """Go duration ``text`` as a Gateway API duration (GEP-2257): ``1.5h`` → ``1h30m``, ``90s``
    → ``1m30s``, ``0`` → ``0s``. Raises :class:`RequestTimeoutError` for what is not a Go duration
    without a sign, is finer than a millisecond, or needs more than 99999 hours. A value that is
    a Gateway API duration already (``120s``) is kept as written."""
    if _GATEWAY_DURATION.fullmatch(text):
        return text
    body = text.removeprefix("+")
    not_a_duration = RequestTimeoutError(
        f"requestTimeout {text!r} is not a duration (such as 30s, 5m, 1h30m)"
    )
    total = Fraction(0)
    if body != "0":
        if not body:
            raise not_a_duration
        pos = 0
        while pos < len(body):
            match = _GO_PART.match(body, pos)
            if match is None:
                raise not_a_duration
            total += Fraction(match[1]) * _GO_UNITS[match[2]]
            pos = match.end()
    if total.denominator != 1:
        raise RequestTimeoutError(
            f"requestTimeout {text!r} is finer than a millisecond, which a route cannot say"
        )
    left = int(total)
    if left // _GATEWAY_UNITS[0][1] > _GATEWAY_MAX_FIELD:
        raise RequestTimeoutError(
            f"requestTimeout {text!r} is longer than a route can say ({_GATEWAY_MAX_FIELD}h)"
        )
    parts = []
    for unit, size in _GATEWAY_UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


# --- the HTTPRoute -----------------------------------------------------------------------------------


def _present(value: Any) -> bool:
    return value is not None and value not in ("", [], {})


def route_body(
    *,
    name: str,
    namespace: str,
    path: str,
    gateway: Mapping[str, Any],
    backend_service: str,
    request_timeout: str | None,
    annotations: Mapping[str, str],
    hostnames: list[str] | None = None,
    labels: Mapping[str, str],
    owner: Mapping[str, Any],
) -> Obj:
    """The HTTPRoute: ``gateway`` (a ParentReference) as the only parent, one rule matching the
    path prefix, rewriting it to ``/`` and forwarding to port 80 of ``backend_service``."""
    parent = {k: v for k, v in gateway.items() if _present(v)}
    if not parent.get("name"):
        raise ValueError("the gateway reference has no name")
    metadata: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels),
        "ownerReferences": [dict(owner)],
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    rule: Obj = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "filters": [
            {
                "type": "URLRewrite",
                "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
            }
        ],
        "backendRefs": [{"name": backend_service, "port": BACKEND_PORT}],
    }
    if request_timeout:
        rule["timeouts"] = {"request": request_timeout}
    spec: Obj = {"parentRefs": [parent], "rules": [rule]}
    if hostnames:
        spec["hostnames"] = list(hostnames)
    return {
        "apiVersion": HTTP_ROUTE.api_version,
        "kind": HTTP_ROUTE.kind,
        "metadata": metadata,
        "spec": spec,
    }


def _gateway_name(parent: Mapping[str, Any]) -> str:
    ref = parent.get("parentRef")
    ref = ref if isinstance(ref, Mapping) else {}
    name = str(ref.get("name") or "the gateway")
    namespace = ref.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def _conditions(parent: Mapping[str, Any], generation: Any) -> dict[str, Mapping[str, Any]]:
    """The parent's conditions by type, leaving out those observed for an older generation of the
    route (when both generations are known)."""
    out: dict[str, Mapping[str, Any]] = {}
    for cond in parent.get("conditions") or []:
        if not isinstance(cond, Mapping) or not cond.get("type"):
            continue
        observed = cond.get("observedGeneration")
        if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
            continue
        out[str(cond["type"])] = cond
    return out


def route_condition(route: Mapping[str, Any] | None) -> tuple[bool, str, str]:
    """(ok, reason, message) for the service's ``HTTPRouteReady`` condition, from the route's
    ``status.parents``: accepted by any parent wins, then a rejection, then unresolved references,
    else pending."""
    if route is None:
        return False, REASON_CREATING, "creating the HTTPRoute"
    status = route.get("status")
    parents = [p for p in (status or {}).get("parents") or [] if isinstance(p, Mapping)]
    parents = sorted(parents, key=_gateway_name)
    if not parents:
        return False, REASON_PENDING, "waiting for the gateway to accept the route"
    generation = (route.get("metadata") or {}).get("generation")
    seen = [(_gateway_name(p), _conditions(p, generation)) for p in parents]
    for gateway, conds in seen:
        if str(conds.get("Accepted", {}).get("status")) == "True":
            return True, REASON_ACCEPTED, f"accepted by {gateway}"
    for gateway, conds in seen:
        accepted = conds.get("Accepted", {})
        if str(accepted.get("status")) == "False":
            parts = [gateway, str(accepted.get("reason") or "NotAccepted")]
            if accepted.get("message"):
                parts.append(str(accepted["message"]))
            return False, REASON_REJECTED, ": ".join(parts)
    for gateway, conds in seen:
        resolved = conds.get("ResolvedRefs", {})
        if str(resolved.get("status")) == "False":
            reason = resolved.get("reason") or "RefNotResolved"
            message = f"{gateway} cannot resolve the route's references: {reason}"
            if resolved.get("message"):
                message += f": {resolved['message']}"
            return False, REASON_PENDING, message
    gateways = ", ".join(gateway for gateway, _ in seen)
    return False, REASON_PENDING, f"waiting for {gateways} to accept the route"


# --- what the service's routing asks for --------------------------------------------------------------


@dataclass(frozen=True)
class RoutePlan:
    """What to do about a service's HTTPRoute: apply ``body`` (enabled and writable), or only
    report ``condition`` (and delete the route when ``delete``). ``path`` is ``status.routing``'s."""

    body: Obj | None = None
    path: str | None = None
    condition: ConditionReport | None = None
    delete: bool = False
    clear: bool = False  # status.routing is cleared
    invalid: bool = False  # the condition's reason is also ConfigValid=False's (the spec must change)


def _setting(service: ServiceView, config: RuntimeConfig, field: str) -> Any:
    """A routing field: the service's own when set (an empty list is not set), else the runtime
    config's."""
    own = service.routing_setting(field)
    return own if own not in (None, []) else config.routing_setting(field)


def _hostnames(service: ServiceView, config: RuntimeConfig) -> list[str]:
    return [str(h) for h in _setting(service, config, "hostnames") or []]


def enabled(service: ServiceView, config: RuntimeConfig) -> bool:
    """Whether the service is routed (its own ``routing.enabled``, else the runtime config's)."""
    return bool(_setting(service, config, "enabled"))


def gateway_to_read(service: ServiceView, config: RuntimeConfig) -> tuple[str, str] | None:
    """``(namespace, name)`` of the parent Gateway whose listeners :func:`plan_route` needs: a
    route is wanted, with a Gateway parent and no hostnames. ``None`` when nothing need be read."""
    if not enabled(service, config) or _hostnames(service, config):
        return None
    gateway = _setting(service, config, "gateway_ref")
    if gateway is None or not gateway.name or (gateway.kind or "Gateway") != "Gateway":
        return None
    return str(gateway.namespace or service.namespace or ""), str(gateway.name)


def plan_route(
    service: ServiceView, config: RuntimeConfig, name: str, backend: str, listeners: int | None = None
) -> RoutePlan:
    """The HTTPRoute ``name`` of ``service`` in front of the predictor Service ``backend``: each
    field from the service's own ``routing`` when set, else the runtime config's. ``listeners`` is
    how many listeners the parent Gateway (:func:`gateway_to_read`) has, when it was read: with
    more than one and no hostnames there is no route (``RouteHostnameRequired``), as in the
    released original: a route without hostnames would take every host of a shared gateway."""

    def setting(field: str) -> Any:
        return _setting(service, config, field)

    if not setting("enabled"):
        had = service.condition(ROUTE_READY) is not None
        off = condition(ROUTE_READY, True, "RoutingDisabled", "routing is disabled") if had else None
        return RoutePlan(condition=off, delete=True, clear=True)
    gateway = setting("gateway_ref")
    if gateway is None or not gateway.name:
        message = (
            "routing is enabled but no gateway is configured "
            "(spec.routing.gatewayRef or the runtime config's)"
        )
        return RoutePlan(condition=condition(ROUTE_READY, False, "GatewayNotConfigured", message))
    hostnames = _hostnames(service, config)
    if not hostnames and listeners is not None and listeners > 1:
        where = gateway_to_read(service, config)
        shown = "/".join(where) if where else "the parent gateway"
        message = (
            f"parent gateway {shown} has {listeners} listeners but no routing hostnames are configured; "
            "refusing to create an all-hosts route (set spec.routing.hostnames or the runtime "
            "config's routing.hostnames)"
        )
        return RoutePlan(
            condition=condition(ROUTE_READY, False, REASON_HOSTNAME_REQUIRED, message),
            delete=True,
            clear=True,
            invalid=True,
        )
    template = setting("path_template")
    try:
        path = render_path(str(template), service.obj) if template else default_path(service.obj)
    except PathTemplateError as exc:
        shown = quote_template(str(template or DEFAULT_PATH_TEMPLATE))
        message = f"path template {shown}: {exc}"
        return RoutePlan(
            condition=condition(ROUTE_READY, False, "PathTemplateInvalid", message), delete=True, clear=True
        )
    timeout = setting("request_timeout")
    try:
        request_timeout = gateway_duration(str(timeout)) if timeout else None
    except RequestTimeoutError as exc:
        return RoutePlan(
            condition=condition(ROUTE_READY, False, REASON_TIMEOUT_INVALID, str(exc)), delete=True, clear=True
        )
    own_annotations = getattr(service.routing, "annotations", None) or {}
    config_annotations = getattr(config.routing, "annotations", None) or {}
    labels = {
        "app.kubernetes.io/component": "routing",
        "app.kubernetes.io/managed-by": "aim-engine",
        "app.kubernetes.io/part-of": "aim-engine",
        SERVICE_LABEL: label_value(service.name),
    }
    body = route_body(
        name=name,
        namespace=service.namespace or "",
        path=path,
        gateway=written(gateway),
        backend_service=backend,
        request_timeout=request_timeout,
        annotations={**config_annotations, **own_annotations},
        hostnames=hostnames,
        labels=labels,
        owner=owner_reference(service.ref, service.obj),
    )
    return RoutePlan(body=body, path=path)
