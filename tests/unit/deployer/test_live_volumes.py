"""An update of a running InferenceService keeps the volumes it mounts
(``aim_deployer.live_volumes.keep_live_volumes``), composed with the body
:func:`aim_deployer.inference.build` makes."""

from __future__ import annotations

import copy

from aim_deployer import inference
from aim_deployer.inference import CacheMount, Inputs
from aim_deployer.live_volumes import keep_live_volumes
from aim_deployer.service_view import ServiceView
from aimcore.api.kinds import by_kind
from aimcore.api.types import Obj
from aimcore.domain.families.models import Model
from aimcore.domain.families.templates import Template

AIM = "aim.eai.amd.com"
CACHE = CacheMount("hf-org-model", "pvc-hf-org-model", "/workspace/model-cache/org/model")


def body(*caches: CacheMount, replicas: int = 1) -> Obj:
    service = {
        "metadata": {"name": "chat", "namespace": "ns", "uid": "svc-uid"},
        "spec": {"model": {"name": "m"}, "replicas": replicas},
    }
    return inference.build(
        Inputs(
            service=ServiceView(by_kind(AIM, "AIMService"), service),
            model=Model(
                by_kind(AIM, "AIMClusterModel"), {"metadata": {"name": "m"}, "spec": {"image": "i:1"}}
            ),
            template=Template(
                by_kind(AIM, "AIMServiceTemplate"),
                {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"modelName": "m"}},
            ),
            config_env=[],
            propagated_labels={},
            caches=caches,
        )
    )


def served(obj: Obj) -> Obj:
    """``obj`` as the API server returns it (server-set fields added)."""
    out = copy.deepcopy(obj)
    out["metadata"].update({"uid": "isvc-uid", "resourceVersion": "7"})
    out["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    return out


def volumes(obj: Obj) -> list[str]:
    return [v["name"] for v in obj["spec"]["predictor"]["volumes"]]


def mounts(obj: Obj) -> list[tuple[str, str]]:
    container = obj["spec"]["predictor"]["containers"][0]
    return [(m["name"], m["mountPath"]) for m in container["volumeMounts"]]


def test_nothing_running_leaves_the_body_as_built() -> None:
    built = body()
    assert keep_live_volumes(built, None) is built


def test_an_update_built_without_the_cache_keeps_the_mounted_one() -> None:
    live = served(body(CACHE))
    update = keep_live_volumes(body(replicas=2), live)
    assert volumes(update) == ["dshm", "hf-org-model"]
    assert mounts(update) == [("dshm", "/dev/shm"), ("hf-org-model", CACHE.mount_path)]
    claim = update["spec"]["predictor"]["volumes"][1]["persistentVolumeClaim"]["claimName"]
    assert claim == "pvc-hf-org-model"
    assert update["spec"]["predictor"]["minReplicas"] == 2  # the update itself goes through


def test_an_update_with_the_same_cache_is_unchanged() -> None:
    live = served(body(CACHE))
    assert keep_live_volumes(body(CACHE, replicas=3), live) == body(CACHE, replicas=3)


def test_a_replacement_at_the_same_path_wins_and_the_old_volume_goes() -> None:
    live = served(body(CACHE))
    new = CacheMount("hf-org-model-2", "pvc-new", CACHE.mount_path)
    update = keep_live_volumes(body(new), live)
    assert volumes(update) == ["dshm", "hf-org-model-2"]
    assert mounts(update) == [("dshm", "/dev/shm"), ("hf-org-model-2", CACHE.mount_path)]


def test_a_second_cache_is_added_beside_the_kept_one() -> None:
    other = CacheMount("hf-org-other", "pvc-other", "/workspace/model-cache/org/other")
    update = keep_live_volumes(body(other), served(body(CACHE)))
    assert volumes(update) == ["dshm", "hf-org-other", "hf-org-model"]


def test_inputs_are_not_mutated() -> None:
    live, built = served(body(CACHE)), body()
    before = copy.deepcopy((live, built))
    keep_live_volumes(built, live)
    assert (live, built) == before
