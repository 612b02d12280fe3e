"""Identity of every kind the operator touches (ours and the children it creates), so subjects, KV
keys, API paths and watches are all built from one description of a kind.

The ground floor: it imports no CRD model (the watcher, which never parses an object, does not load
them). ``tests/unit/api/test_kinds.py`` checks the table against the models."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from aimcore.api.behaviour import Behaviour

# The API groups, declared once.
GROUP_AIM = "aim.eai.amd.com"
GROUP_LEGACY = "aim.silogen.ai"
GROUP_LLMKUBE = "inference.llmkube.dev"
AIM_GROUPS = (GROUP_AIM, GROUP_LEGACY, GROUP_LLMKUBE)


@dataclass(frozen=True, order=True)
class KindRef:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def short(self) -> str:
        """``Kind.group`` as kubectl spells a fully qualified resource (for logs and the CLI)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """REST path of the collection or of one object."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


# Children and dependencies owned by other projects; their CRDs come from KServe, Gateway API, KEDA.
INFERENCE_SERVICE = KindRef("serving.kserve.io", "v1beta1", "InferenceService", "inferenceservices", True)
HTTP_ROUTE = KindRef("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes", True)
SCALED_OBJECT = KindRef("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects", True)
# Read, never written: the parent Gateway of a route, whose listeners decide whether a route without
# hostnames may be created (the deployer reads it from the API server when it needs to).
GATEWAY = KindRef("gateway.networking.k8s.io", "v1", "Gateway", "gateways", True)
EXTERNAL_KINDS = (INFERENCE_SERVICE, HTTP_ROUTE, SCALED_OBJECT, GATEWAY)

# Built-in kinds the services create or read.
POD = KindRef("", "v1", "Pod", "pods", True)
PVC = KindRef("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True)
NODE = KindRef("", "v1", "Node", "nodes", False)
SECRET = KindRef("", "v1", "Secret", "secrets", True)
NAMESPACE = KindRef("", "v1", "Namespace", "namespaces", False)
JOB = KindRef("batch", "v1", "Job", "jobs", True)
# KServe's predictor Deployment and the HPA KEDA makes for it: read back for AIMService
# ``status.runtime`` (autoscaling/v1: served by every Kubernetes version, with the replica counts).
DEPLOYMENT = KindRef("apps", "v1", "Deployment", "deployments", True)
HPA = KindRef("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True)
BUILTIN_KINDS = (POD, PVC, NODE, SECRET, NAMESPACE, JOB, DEPLOYMENT, HPA)
# Written (never read) by the status service: core/v1 Events on condition transitions.
EVENT = KindRef("", "v1", "Event", "events", True)

# Every child object the operator creates carries this label; the watcher selects children by it,
# so it never mirrors the rest of the cluster's Pods, Jobs or PVCs.
PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF_VALUE = "aim-engine"
CHILD_SELECTOR = f"{PART_OF_LABEL}={PART_OF_VALUE}"

# Children watched by label (their changes map back to the owning AIM objects), and Nodes (for GPU
# labels). Secrets are never watched: services read them by name when a spec references one. The
# predictor's Deployment and HPA carry the InferenceService's labels (KServe copies them to its
# children, KEDA the ScaledObject's to its HPA), so the same selector finds them.
CHILD_KINDS = (INFERENCE_SERVICE, HTTP_ROUTE, SCALED_OBJECT, JOB, POD, PVC, DEPLOYMENT, HPA)


# Every kind our CRDs serve, in the order of the models (aimcore.api.crds.registry).
CRD_KINDS: tuple[KindRef, ...] = (
    KindRef(GROUP_AIM, "v1alpha1", "AIMModel", "aimmodels", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMClusterModel", "aimclustermodels", False),
    KindRef(GROUP_AIM, "v1alpha1", "AIMClusterModelSource", "aimclustermodelsources", False),
    KindRef(GROUP_AIM, "v1alpha1", "AIMServiceTemplate", "aimservicetemplates", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMClusterServiceTemplate", "aimclusterservicetemplates", False),
    KindRef(GROUP_AIM, "v1alpha1", "AIMService", "aimservices", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMTemplateCache", "aimtemplatecaches", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMModelCache", "aimmodelcaches", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMArtifact", "aimartifacts", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMRuntimeConfig", "aimruntimeconfigs", True),
    KindRef(GROUP_AIM, "v1alpha1", "AIMClusterRuntimeConfig", "aimclusterruntimeconfigs", False),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMClusterImage", "aimclusterimages", False),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMImage", "aimimages", True),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMClusterModel", "aimclustermodels", False),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMModel", "aimmodels", True),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMClusterRuntimeConfig", "aimclusterruntimeconfigs", False),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMRuntimeConfig", "aimruntimeconfigs", True),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMClusterServiceTemplate", "aimclusterservicetemplates", False),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMServiceTemplate", "aimservicetemplates", True),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMService", "aimservices", True),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMTemplateCache", "aimtemplatecaches", True),
    KindRef(GROUP_LEGACY, "v1alpha1", "AIMModelCache", "aimmodelcaches", True),
    KindRef(GROUP_LLMKUBE, "v1alpha1", "Model", "models", True),
)


def crd_kinds() -> tuple[KindRef, ...]:
    """Every kind served by our CRDs (three API groups)."""
    return CRD_KINDS


_BY_KIND = {(ref.group, ref.kind): ref for ref in (*CRD_KINDS, *EXTERNAL_KINDS, *BUILTIN_KINDS)}


def by_kind(group: str, kind: str) -> KindRef:
    try:
        return _BY_KIND[(group, kind)]
    except KeyError:
        raise KeyError(f"unknown kind {kind}.{group}") from None


def twins(*kinds: str) -> tuple[KindRef, ...]:
    """The kinds of these names in the current group, then their legacy twins (the names a group
    does not serve are skipped: the legacy group's ``AIMImage`` has no current twin)."""
    return tuple(_BY_KIND[(g, k)] for g in (GROUP_AIM, GROUP_LEGACY) for k in kinds if (g, k) in _BY_KIND)


# The kind families, declared once: each lists the current group's kinds, then their legacy twins
# (the order the services watch them in). Generation-1 images are models of the legacy group.
MODEL_KINDS = twins("AIMImage", "AIMClusterImage", "AIMModel", "AIMClusterModel")
TEMPLATE_KINDS = twins("AIMServiceTemplate", "AIMClusterServiceTemplate")
RUNTIME_CONFIG_KINDS = twins("AIMRuntimeConfig", "AIMClusterRuntimeConfig")
SERVICE_KINDS = twins("AIMService")
TEMPLATE_CACHE_KINDS = twins("AIMTemplateCache")
MODEL_CACHE_KINDS = twins("AIMModelCache", "AIMArtifact")  # AIMArtifact: the released name
MODEL_SOURCE_KINDS = twins("AIMClusterModelSource")
LLMKUBE_MODEL = _BY_KIND[(GROUP_LLMKUBE, "Model")]


@dataclass(frozen=True)
class KindPair:
    """A family's namespaced kind and its cluster-scoped twin in one API group (``AIMModel`` and
    ``AIMClusterModel`` of ``aim.eai.amd.com``). Iterated: the namespaced kind, then the cluster's
    (the order a namespaced object looks a dependency up in)."""

    namespaced: KindRef
    cluster: KindRef

    def scoped(self, *, cluster: bool) -> KindRef:
        return self.cluster if cluster else self.namespaced

    def __iter__(self) -> Iterator[KindRef]:
        return iter((self.namespaced, self.cluster))


def _pairs(namespaced: str, cluster: str) -> dict[str, KindPair]:
    """The pair of these names in each AIM group that serves them."""
    return {
        g: KindPair(_BY_KIND[(g, namespaced)], _BY_KIND[(g, cluster)])
        for g in (GROUP_AIM, GROUP_LEGACY)
        if (g, namespaced) in _BY_KIND
    }


# The scoped families' kinds by group (the families answer for them: ``Model.kind(group, cluster=...)``).
MODEL_PAIRS = _pairs("AIMModel", "AIMClusterModel")
IMAGE_PAIRS = _pairs("AIMImage", "AIMClusterImage")  # generation-1 images: the legacy group's only
TEMPLATE_PAIRS = _pairs("AIMServiceTemplate", "AIMClusterServiceTemplate")
RUNTIME_CONFIG_PAIRS = _pairs("AIMRuntimeConfig", "AIMClusterRuntimeConfig")


@dataclass(frozen=True)
class Renamed:
    """A kind of one API group under the seeds' name and the released original's (``AIMModelCache``
    and ``AIMArtifact`` of ``aim.eai.amd.com``; one kind twice where a group kept the name). Both
    are served and read alike; the behaviour setting picks the one the operator creates. Iterated:
    each kind once, the seeds' first."""

    seeds: KindRef
    released: KindRef

    def created(self, behaviour: Behaviour) -> KindRef:
        """The kind the operator creates under ``behaviour``."""
        return self.released if behaviour.released else self.seeds

    def __iter__(self) -> Iterator[KindRef]:
        return iter(dict.fromkeys((self.seeds, self.released)))


def _renamed(seeds: str, released: str) -> dict[str, Renamed]:
    """The kind of each AIM group under both names (the seeds' where a group has no other)."""
    return {
        g: Renamed(_BY_KIND[(g, seeds)], _BY_KIND.get((g, released), _BY_KIND[(g, seeds)]))
        for g in (GROUP_AIM, GROUP_LEGACY)
        if (g, seeds) in _BY_KIND
    }


# The model cache by group: AIMModelCache, and in the current group also AIMArtifact (v0.2.1's name).
MODEL_CACHE_NAMES = _renamed("AIMModelCache", "AIMArtifact")


def in_group(kinds: tuple[KindRef, ...], group: str) -> KindRef:
    """The kind of a family of one kind per group (``TEMPLATE_CACHE_KINDS``…) that ``group`` serves."""
    found = [ref for ref in kinds if ref.group == group]
    if len(found) != 1:
        raise KeyError(f"{group} serves {len(found)} of {', '.join(ref.short for ref in kinds)}, not one")
    return found[0]


STATUS_OWNERS: dict[str, tuple[KindRef, ...]] = {
    "deployer": SERVICE_KINDS,
    "discovery": (*MODEL_KINDS, *TEMPLATE_KINDS, *RUNTIME_CONFIG_KINDS),
    "registry-sync": MODEL_SOURCE_KINDS,
    "cache": (*TEMPLATE_CACHE_KINDS, *MODEL_CACHE_KINDS, LLMKUBE_MODEL),
}
"""The one service that reconciles each kind and reports its status
(docs/design.md#status-ownership): nats-server lets a service publish reports only for the kinds it
owns (:mod:`aimcore.api.bus.auth`), and the status service applies a report only from the owner its
subject names."""

_STATUS_OWNER = {(ref.group, ref.kind): service for service, refs in STATUS_OWNERS.items() for ref in refs}


def status_owner(group: str, kind: str) -> str | None:
    """The service whose reports set the status of ``group``/``kind`` (``None``: no service's)."""
    return _STATUS_OWNER.get((group, kind))
