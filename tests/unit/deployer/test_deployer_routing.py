"""Service routing: the default path, path-template rendering (JSONPath subset, sanitisation, slashes,
length, errors instead of the original's silent fallback), the HTTPRoute body and the
HTTPRouteReady condition read from the route's status."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aim_deployer.routing import (
    MAX_PATH,
    PathTemplateError,
    RequestTimeoutError,
    default_path,
    evaluate,
    gateway_duration,
    gateway_to_read,
    plan_route,
    render_path,
    route_body,
    route_condition,
)
from aim_deployer.service_view import ServiceView
from aimcore.api.crds.validation import parse
from aimcore.api.kinds import GROUP_AIM, by_kind
from aimcore.domain.families.runtimeconfigs import RuntimeConfig
from aimcore.domain.runtimeconfig import Resolved
from aimcore.runtime import child_labels, owner_reference

SERVICE: dict[str, Any] = {
    "apiVersion": "aim.eai.amd.com/v1alpha1",
    "kind": "AIMService",
    "metadata": {
        "name": "Qwen3_Chat",
        "namespace": "ml-team",
        "uid": "0f1e2d3c-AAAA-4bbb-8ccc-123456789abc",
        "generation": 3,
        "labels": {"team": "  Blue Team  ", "app.kubernetes.io/name": "qwen", "empty": "", "dots": "..."},
        "annotations": {"x.y/z": "Alpha/Beta//Gamma/", "blank": "  ", "pretty": "Hello World"},
    },
    "spec": {
        "model": {"name": "Qwen/Qwen3-32B"},
        "replicas": 2,
        "enabled": True,
        "ports": [{"name": "http"}, {"name": "grpc"}],
        "tags": ["First", "Second"],
        "nothing": None,
    },
}


def test_default_path() -> None:
    assert default_path(SERVICE) == "/ml-team/0f1e2d3c-aaaa-4bbb-8ccc-123456789abc"


def test_default_path_without_uid_is_an_error() -> None:
    service = copy.deepcopy(SERVICE)
    del service["metadata"]["uid"]
    with pytest.raises(PathTemplateError, match=r"metadata\.uid"):
        default_path(service)


@pytest.mark.parametrize(
    ("template", "path"),
    [
        ("/{.metadata.namespace}/{.metadata.name}", "/ml-team/qwen3-chat"),
        ("/{.metadata.namespace}/{.metadata.uid}", "/ml-team/0f1e2d3c-aaaa-4bbb-8ccc-123456789abc"),
        ("/{.metadata.labels['team']}", "/blue-team"),
        ('/{.metadata.labels["team"]}', "/blue-team"),
        ("/{.metadata.labels.team}", "/blue-team"),
        ("/{.metadata.labels['app.kubernetes.io/name']}", "/qwen"),
        # the model name's slash is sanitised inside the value (not an annotation)
        ("/{.spec.model.name}", "/qwen-qwen3-32b"),
        # annotation values may carry slashes: they become segments, each sanitised
        ("/{.metadata.annotations['x.y/z']}/v1", "/alpha/beta/gamma/v1"),
        ("/{.metadata.annotations['pretty']}", "/hello-world"),
        ("/{.spec.tags[0]}/{.spec.tags[-1]}", "/first/second"),
        ("/{.spec.ports[1].name}", "/grpc"),
        ("/{.spec.replicas}/{.spec.enabled}", "/2/true"),
        ("{$.metadata.namespace}", "/ml-team"),
        # literal text is kept, then segment-sanitised; slashes de-duplicated; trailing slash removed
        ("api//V1_Beta///{.metadata.namespace}/", "/api/v1-beta/ml-team"),
        ("//{.metadata.namespace}//chat//", "/ml-team/chat"),
        ("/pre-{.metadata.namespace}-post", "/pre-ml-team-post"),
        ("/_/{.metadata.namespace}", "/ml-team"),  # a segment with nothing left is dropped
        ("/{.metadata.namespace}{.spec.tags[0]}", "/ml-teamfirst"),
    ],
)
def test_render_path(template: str, path: str) -> None:
    assert render_path(template, SERVICE) == path


def test_long_values_are_an_error_not_cut_to_63() -> None:
    """The original cut every segment to 63 characters: a different path than the one asked for."""
    service = copy.deepcopy(SERVICE)
    service["metadata"]["name"] = "a" * 70 + "-b"
    with pytest.raises(PathTemplateError, match="renders a segment of 72 characters \\(at most 63\\)"):
        render_path("/{.metadata.namespace}/{.metadata.name}", service)
    service["metadata"]["name"] = "a" * 63
    assert render_path("/{.metadata.name}", service) == "/" + "a" * 63


def test_long_literal_segments_are_an_error_not_cut_to_63() -> None:
    with pytest.raises(PathTemplateError, match="segment of 80 characters"):
        render_path("/" + "x" * 80, SERVICE)
    with pytest.raises(PathTemplateError, match=r"renders a segment of 10000 characters \(at most 63\)"):
        render_path("/" + "x" * 10_000, SERVICE)


def test_long_annotation_segments_are_an_error() -> None:
    service = copy.deepcopy(SERVICE)
    service["metadata"]["annotations"]["x.y/z"] = "ok/" + "b" * 64
    with pytest.raises(PathTemplateError, match="segment of 64 characters"):
        render_path("/{.metadata.annotations['x.y/z']}", service)


def test_path_length_limit() -> None:
    ok = "/".join(["a" * 49] * 4)  # 4 * 50 = 200 with the leading slash
    assert render_path(ok, SERVICE) == "/" + ok
    assert len("/" + ok) == MAX_PATH
    with pytest.raises(PathTemplateError, match="201 characters"):
        render_path(ok + "b", SERVICE)


@pytest.mark.parametrize(
    ("template", "match"),
    [
        ("/{.metadata.labels['missing']}", "no label 'missing'"),
        ("/{.metadata.annotations['missing']}", "no annotation 'missing'"),
        ("/{.spec.missing}", r"field \.spec\.missing is not set"),
        ("/{.spec.nothing}", r"field \.spec\.nothing is not set"),
        ("/{.spec.model.name.deeper}", r"\.spec\.model\.name\.deeper"),
        ("/{.spec.tags[5]}", "out of range"),
        ("/{.spec.model[0]}", "not a list"),
        ("/{.spec.model}", "is an object"),
        ("/{.spec.tags}", "is a list"),
        ("/{.spec.tags[*]}", "unsupported JSONPath"),
        ("/{.spec.ports[?(@.name=='http')].name}", "unsupported JSONPath"),
        ("/{..name}", "unsupported JSONPath"),
        ("/{.spec.tags[0:1]}", "unsupported JSONPath"),
        ("/{.spec.*}", "unsupported JSONPath"),
        ("/{.metadata.labels['team}", "unbalanced '{'"),  # the quote swallows the brace
        ("/{.spec.tags[0}", "unclosed '\\['"),
        ("/{metadata.name}", "must start with '.'"),
        ("/{}", "empty expression"),
        ("/{  }", "empty expression"),
        ("/{.metadata.name", "unbalanced '{'"),
        ("/{.metadata.{name}}", "unbalanced '{'"),
        ("/.metadata.name}", "unbalanced '}'"),
        ("/{.metadata.labels['empty']}", r"labels\['empty'\]\} renders an empty value"),  # not "part"
        ("/{.metadata.labels['dots']}", "nothing usable"),
        ("/{.metadata.annotations['blank']}", "empty value"),
        ("/", "empty path"),
        ("///", "empty path"),
        ("", "empty path"),
    ],
)
def test_render_errors(template: str, match: str) -> None:
    with pytest.raises(PathTemplateError, match=match):
        render_path(template, SERVICE)


def test_error_names_the_expression() -> None:
    with pytest.raises(PathTemplateError) as err:
        render_path("/{.metadata.namespace}/{.metadata.labels['team-x']}", SERVICE)
    assert "{.metadata.labels['team-x']}" in str(err.value)


def test_quoted_braces_inside_expression() -> None:
    service = copy.deepcopy(SERVICE)
    service["metadata"]["labels"]["a}b"] = "ok"
    assert render_path("/{.metadata.labels['a}b']}", service) == "/ok"


def test_evaluate_returns_raw_values() -> None:
    assert evaluate(".spec.model", SERVICE) == {"name": "Qwen/Qwen3-32B"}
    assert evaluate(".metadata.labels['team']", SERVICE) == "  Blue Team  "


def test_path_template_error_is_a_value_error() -> None:
    assert issubclass(PathTemplateError, ValueError)


# --- the HTTPRoute ----------------------------------------------------------------------------------

OWNER = owner_reference(by_kind("aim.eai.amd.com", "AIMService"), SERVICE)


def body(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": "qwen3-chat-a04542d9",
        "namespace": "ml-team",
        "path": "/ml-team/qwen3-chat",
        "gateway": {"name": "inference-gateway", "namespace": "gateways"},
        "backend_service": "qwen3-chat-a04542d9-predictor",
        "request_timeout": None,
        "annotations": {},
        "labels": child_labels("aim-deployer"),
        "owner": OWNER,
    }
    args.update(kw)
    result: dict[str, Any] = route_body(**args)
    return result


def test_route_body_shape() -> None:
    assert body(request_timeout="120s", annotations={"a": "b"}) == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": "qwen3-chat-a04542d9",
            "namespace": "ml-team",
            "labels": {
                "app.kubernetes.io/managed-by": "aim-deployer",
                "app.kubernetes.io/part-of": "aim-engine",
            },
            "annotations": {"a": "b"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "parentRefs": [{"name": "inference-gateway", "namespace": "gateways"}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/ml-team/qwen3-chat"}}],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
                        }
                    ],
                    "backendRefs": [{"name": "qwen3-chat-a04542d9-predictor", "port": 80}],
                    "timeouts": {"request": "120s"},
                }
            ],
        },
    }


def test_route_body_without_timeout_or_annotations() -> None:
    route = body()
    assert "annotations" not in route["metadata"]
    assert "timeouts" not in route["spec"]["rules"][0]


def test_route_body_copies_only_set_gateway_keys() -> None:
    gateway = {"name": "gw", "namespace": None, "sectionName": "", "port": 8080, "kind": "Gateway"}
    assert body(gateway=gateway)["spec"]["parentRefs"] == [{"name": "gw", "port": 8080, "kind": "Gateway"}]
    assert body(gateway={"name": "gw"})["spec"]["parentRefs"] == [{"name": "gw"}]  # no namespace invented


def test_route_body_does_not_alias_inputs() -> None:
    labels = {"x": "y"}
    gateway = {"name": "gw"}
    route = body(labels=labels, gateway=gateway)
    route["metadata"]["labels"]["z"] = "w"
    route["spec"]["parentRefs"][0]["name"] = "other"
    route["metadata"]["ownerReferences"][0]["name"] = "other"
    assert labels == {"x": "y"}
    assert gateway == {"name": "gw"}
    assert OWNER["name"] == "Qwen3_Chat"


def test_route_body_requires_gateway_name() -> None:
    with pytest.raises(ValueError, match="no name"):
        body(gateway={"namespace": "gateways"})


# --- HTTPRouteReady ---------------------------------------------------------------------------------


def cond(
    type: str, status: str, reason: str = "", message: str = "", gen: int | None = None
) -> dict[str, Any]:
    c: dict[str, Any] = {"type": type, "status": status, "reason": reason, "message": message}
    if gen is not None:
        c["observedGeneration"] = gen
    return c


def route(*parents: tuple[str, list[dict[str, Any]]], generation: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "r"}
    if generation is not None:
        meta["generation"] = generation
    return {
        "metadata": meta,
        "status": {
            "parents": [
                {"parentRef": {"name": gw, "namespace": "gateways"}, "controllerName": "x", "conditions": cs}
                for gw, cs in parents
            ]
        },
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (None, (False, "HTTPRouteCreating", "creating the HTTPRoute")),
        (
            {"metadata": {"name": "r"}},
            (False, "HTTPRoutePending", "waiting for the gateway to accept the route"),
        ),
        (route(), (False, "HTTPRoutePending", "waiting for the gateway to accept the route")),
        (
            route(("gw", [cond("Accepted", "True", "Accepted"), cond("ResolvedRefs", "True")])),
            (True, "HTTPRouteAccepted", "accepted by gateways/gw"),
        ),
        (
            route(("gw", [cond("Accepted", "False", "NotAllowedByListeners", "no listener allows ml-team")])),
            (False, "HTTPRouteRejected", "gateways/gw: NotAllowedByListeners: no listener allows ml-team"),
        ),
        (
            route(("gw", [cond("Accepted", "False")])),
            (False, "HTTPRouteRejected", "gateways/gw: NotAccepted"),
        ),
        (
            route(
                (
                    "gw",
                    [cond("Accepted", "Unknown"), cond("ResolvedRefs", "False", "BackendNotFound", "no svc")],
                )
            ),
            (
                False,
                "HTTPRoutePending",
                "gateways/gw cannot resolve the route's references: BackendNotFound: no svc",
            ),
        ),
        (
            route(("gw", [])),
            (False, "HTTPRoutePending", "waiting for gateways/gw to accept the route"),
        ),
        # any accepting parent wins over another's rejection
        (
            route(("a", [cond("Accepted", "False", "X")]), ("b", [cond("Accepted", "True")])),
            (True, "HTTPRouteAccepted", "accepted by gateways/b"),
        ),
        # a rejection wins over unresolved references
        (
            route(("a", [cond("ResolvedRefs", "False", "R")]), ("b", [cond("Accepted", "False", "X", "m")])),
            (False, "HTTPRouteRejected", "gateways/b: X: m"),
        ),
        # accepted for an older generation of the route is not accepted yet
        (
            route(("gw", [cond("Accepted", "True", gen=2)]), generation=3),
            (False, "HTTPRoutePending", "waiting for gateways/gw to accept the route"),
        ),
        (
            route(("gw", [cond("Accepted", "True", gen=3)]), generation=3),
            (True, "HTTPRouteAccepted", "accepted by gateways/gw"),
        ),
    ],
)
def test_route_condition(obj: dict[str, Any] | None, expected: tuple[bool, str, str]) -> None:
    assert route_condition(obj) == expected


def test_route_condition_without_parent_namespace() -> None:
    obj = {"status": {"parents": [{"parentRef": {"name": "gw"}, "conditions": [cond("Accepted", "True")]}]}}
    assert route_condition(obj) == (True, "HTTPRouteAccepted", "accepted by gw")


@pytest.mark.parametrize(
    ("text", "gateway"),
    [
        ("120s", "120s"),  # a Gateway API duration already: kept as written
        ("1h30m", "1h30m"),
        ("1.5h", "1h30m"),
        ("+2m", "2m"),
        ("0", "0s"),
        ("1h0m0.5s", "1h500ms"),
        ("90000s", "90000s"),
        ("100000s", "27h46m40s"),  # six digits: more than a Gateway API field takes
        ("2000us", "2ms"),
        ("99999h59m59s999ms", "99999h59m59s999ms"),
    ],
)
def test_gateway_duration(text: str, gateway: str) -> None:
    assert gateway_duration(text) == gateway


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("250us", "finer than a millisecond"),
        ("1.5ms", "finer than a millisecond"),
        ("100000h", "longer than a route can say"),
        ("-1s", "not a duration"),
        ("1 h", "not a duration"),
        ("", "not a duration"),
    ],
)
def test_gateway_duration_refuses(text: str, says: str) -> None:
    with pytest.raises(RequestTimeoutError, match=says):
        gateway_duration(text)


# -- hostnames and the parent gateway's listeners ---------------------------------------------------

GATEWAY_REF = {"name": "shared", "namespace": "gateways"}


def routed(service_routing: dict[str, Any] | None, config_routing: dict[str, Any] | None) -> tuple[Any, Any]:
    ref = by_kind(GROUP_AIM, "AIMService")
    obj: dict[str, Any] = {
        "apiVersion": ref.api_version,
        "kind": "AIMService",
        "metadata": {"name": "chat", "namespace": "ml", "uid": "svc-uid"},
        "spec": {"model": {"name": "llama"}, **({"routing": service_routing} if service_routing else {})},
    }
    service = ServiceView.of(ref, parse(obj), obj)
    config = RuntimeConfig.of(GROUP_AIM, Resolved("default", {"routing": config_routing or {}}))
    return service, config


def test_the_services_hostnames_replace_the_runtime_configs() -> None:
    config_routing = {"enabled": True, "gatewayRef": GATEWAY_REF, "hostnames": ["all.example.com"]}
    service, config = routed({"hostnames": ["chat.example.com", "*.chat.example.com"]}, config_routing)
    plan = plan_route(service, config, "r", "b-predictor", listeners=3)
    assert plan.body is not None
    assert plan.body["spec"]["hostnames"] == ["chat.example.com", "*.chat.example.com"]
    assert gateway_to_read(service, config) is None  # named hosts: the listeners do not matter

    service, config = routed(None, config_routing)
    plan = plan_route(service, config, "r", "b-predictor", listeners=3)
    assert plan.body is not None and plan.body["spec"]["hostnames"] == ["all.example.com"]


def test_no_hostnames_on_a_gateway_with_several_listeners_is_no_route_and_an_invalid_spec() -> None:
    service, config = routed({"enabled": True, "gatewayRef": GATEWAY_REF}, None)
    assert gateway_to_read(service, config) == ("gateways", "shared")
    plan = plan_route(service, config, "r", "b-predictor", listeners=2)
    assert plan.body is None and plan.delete and plan.clear and plan.invalid
    assert plan.condition is not None
    assert (plan.condition.type, plan.condition.status, plan.condition.reason) == (
        "HTTPRouteReady",
        "False",
        "RouteHostnameRequired",
    )
    assert plan.condition.message.startswith(
        "parent gateway gateways/shared has 2 listeners but no routing hostnames are configured"
    )


@pytest.mark.parametrize("listeners", [None, 0, 1])
def test_no_hostnames_on_a_gateway_with_one_listener_or_unread_is_an_all_hosts_route(
    listeners: int | None,
) -> None:
    service, config = routed({"enabled": True, "gatewayRef": {"name": "own"}, "hostnames": []}, None)
    assert gateway_to_read(service, config) == ("ml", "own")  # the service's namespace by default
    plan = plan_route(service, config, "r", "b-predictor", listeners=listeners)
    assert plan.body is not None and "hostnames" not in plan.body["spec"]
    assert not plan.invalid


def test_nothing_to_read_when_routing_is_off_or_the_parent_is_no_gateway() -> None:
    assert gateway_to_read(*routed({"enabled": False, "gatewayRef": GATEWAY_REF}, None)) is None
    assert gateway_to_read(*routed({"enabled": True}, None)) is None
    other = {"enabled": True, "gatewayRef": {"name": "mesh", "kind": "Service", "group": ""}}
    assert gateway_to_read(*routed(other, None)) is None


@pytest.mark.parametrize(
    "hostname",
    ["Chat.example.com", "10.0.0.1:80", "chat.example.com.", "*", "a..b", "-a.example.com", "x" * 254],
)
def test_a_hostname_a_route_cannot_match_is_refused(hostname: str) -> None:
    ref = by_kind(GROUP_AIM, "AIMService")
    obj = {
        "apiVersion": ref.api_version,
        "kind": "AIMService",
        "metadata": {"name": "chat", "namespace": "ml"},
        "spec": {"model": {"name": "llama"}, "routing": {"hostnames": [hostname]}},
    }
    with pytest.raises(ValueError, match="is not a hostname a route can match"):
        parse(obj)
