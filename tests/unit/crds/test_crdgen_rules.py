"""A field's own CEL rule must not drop the rules of the type it refers to: before, ``hardware``'s
``hardware is immutable`` replaced ``at least one of gpu or cpu`` (and ``model is immutable`` the
service's ``exactly one of name, image, or custom``), so the generated CRDs lacked them."""

from __future__ import annotations

from typing import Any

from aim_dev import crdgen
from aimcore.api.crds import aim
from aimcore.api.crds.base import Resource


def _rules(node: dict[str, Any]) -> list[str]:
    return [rule["rule"] for rule in node.get("x-kubernetes-validations", [])]


def _spec(kind: type[Resource]) -> dict[str, Any]:
    (version,) = crdgen.crd_for(kind)["spec"]["versions"]
    spec: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def test_a_fields_rule_adds_to_its_types_rules() -> None:
    for kind in (aim.AIMServiceTemplate, aim.AIMClusterServiceTemplate):
        spec = _spec(kind)
        assert aim.TEMPLATE_HARDWARE_GPU_RULE in _rules(spec)
        assert _rules(spec["properties"]["hardware"]) == ["has(self.gpu) || has(self.cpu)", "self == oldSelf"]
        gpu = spec["properties"]["gpu"]
        assert _rules(gpu) == ["!(has(self.model) && has(self.minVram))", "self == oldSelf"]
    model = _spec(aim.AIMService)["properties"]["model"]
    assert aim.SERVICE_MODEL_ONE_OF_RULE in _rules(model) and "self == oldSelf" in _rules(model)


def test_merge_keeps_each_rule_once() -> None:
    rule = {"rule": "self == oldSelf", "message": "x is immutable"}
    other = {"rule": "has(self.a)", "message": "a"}
    merged = crdgen._merge(
        {"type": "object", "x-kubernetes-validations": [other, rule]},
        {"description": "d", "x-kubernetes-validations": [rule]},
    )
    assert merged == {"type": "object", "description": "d", "x-kubernetes-validations": [other, rule]}
    assert "x-kubernetes-validations" not in crdgen._merge({"type": "string"}, {"description": "d"})
