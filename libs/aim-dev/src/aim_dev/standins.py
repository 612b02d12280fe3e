"""Stand-in CRDs for the third-party kinds the operator writes (KServe InferenceService, Gateway
API HTTPRoute, KEDA ScaledObject), and for those ``deploy/overlays/production`` applies
(Prometheus Operator's ServiceMonitor and PrometheusRule: :func:`monitoring_crds`). Their
controllers cannot run here; the test API server and the embedded default install these permissive
CRDs so the objects can be created and inspected. On a real cluster the projects' own CRDs are
used instead."""

from __future__ import annotations

from typing import Any

from aimcore.api.kinds import EXTERNAL_KINDS, KindRef

_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def stand_in_crd(ref: KindRef) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"{ref.plural}.{ref.group}"}
    if ref.group.endswith(".k8s.io"):
        # Groups under k8s.io are protected; the real Gateway API CRDs carry this annotation too.
        metadata["annotations"] = {
            "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api"
        }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": ref.group,
            "names": {
                "kind": ref.kind,
                "listKind": f"{ref.kind}List",
                "plural": ref.plural,
                "singular": ref.kind.lower(),
            },
            "scope": "Namespaced" if ref.namespaced else "Cluster",
            "versions": [
                {
                    "name": ref.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": _OPEN, "status": _OPEN},
                        }
                    },
                }
            ],
        },
    }


def stand_in_crds() -> list[dict[str, Any]]:
    return [stand_in_crd(ref) for ref in EXTERNAL_KINDS]


SERVICE_MONITOR = KindRef("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", True)
PROMETHEUS_RULE = KindRef("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules", True)


def monitoring_crds() -> list[dict[str, Any]]:
    """What the production overlay's ``service-monitor`` and ``monitoring`` components need."""
    return [stand_in_crd(ref) for ref in (SERVICE_MONITOR, PROMETHEUS_RULE)]
