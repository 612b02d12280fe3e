"""A model from an OCI registry answers on a real node.

Tiny model A's GGUF (:mod:`aim_dev.tinyllm`) is pushed with oras-py to the stack's registry as
Docker's model-spec packages it (:func:`tests.oci_models.push_docker_model`: a GGUF layer, a license
layer, Docker's model config, no file names). An AIMService whose custom model names that
``oci://`` reference, with caching on, is cached by a real download Job (aim-download inside the
aim-cache image, on the pod network, reaching the registry on the node's address) and answered by
llama.cpp in a predictor pod that mounts the filled volume. The stack's registry is anonymous (the
node's containerd pulls model images from it), so the pull is too; pull secrets are proven by
the integration tier (tests/integration/test_cache_jobs.py).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from aim_dev import tinyllm
from aim_dev.local.nodestack import NodeStack
from aimcore.api.kinds import JOB
from aimcore.runtime import Kube
from tests import oci_models
from tests.node.helpers import NODE_TIMEOUT, conditions, ran_on_the_node, state, summary
from tests.node.test_operator_inference import (
    MODEL_CACHE,
    SERVICE,
    ask,
    claims,
    custom,
    predictor_pods,
    restarts,
    running,
    service,
)

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

LICENSE = "The tiny model's license: generated weights, no rights reserved."


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_model_pushed_as_a_docker_model_artifact_is_pulled_by_a_download_job_and_answers(  # noqa: PLR0917 - fixtures
    stack: NodeStack, api: Kube, namespace: str, volumes: Any, tmp_path: Path, runtime_image: str
) -> None:
    model = tinyllm.MODEL_A
    assert stack.registry is not None
    gguf = tmp_path / "artifact" / model.filename
    gguf.parent.mkdir()
    shutil.copyfile(tinyllm.ensure(tinyllm.default_dir(), (model,))[model.repo], gguf)
    pushed = oci_models.push_docker_model(stack.registry, oci_models.repo(), "f16", gguf, LICENSE)
    # the same artifact as the download Job's pod sees it: the registry on the node's address
    uri = pushed.uri.replace(stack.registry.host, stack.pod_registry, 1)
    model_id = "aim-tests/oci-tiny-a"
    paths = await volumes(2)
    spec = service(stack, "oci", custom(runtime_image, model_id, uri), "Always")
    # a registry off loopback is spoken to over HTTPS unless told otherwise (docs/caching.md)
    spec["spec"]["env"].append({"name": "OCI_PLAIN_HTTP", "value": "true"})
    await api.create(SERVICE, spec, namespace)
    svc = await running(api, namespace, "oci")
    assert conditions(svc)["CacheReady"]["status"] == "True", summary(svc)

    [cache] = (await api.list(MODEL_CACHE, namespace))[0]
    assert cache["spec"]["sourceUri"] == uri, cache["spec"]
    assert state(cache) == "Ready", summary(cache)
    assert conditions(cache)["DownloadReady"]["reason"] == "Verified", summary(cache)
    # pulled by a real download Job on the node, with the operator's downloader image
    [job] = (await api.list(JOB, namespace, label_selector="aim.eai.amd.com/component=download"))[0]
    assert job["status"].get("succeeded") == 1, job["status"]
    await ran_on_the_node(api, namespace, job["metadata"]["name"], "aim-cache:0.1.0")
    # the volume holds the artifact's blobs under the model-spec's file names, each its digest
    [filled] = [p for p in paths if any(p.rglob("model.gguf"))]
    [pulled] = list(filled.rglob("model.gguf"))
    assert sha256(pulled) == pushed.blobs["model.gguf"] == sha256(gguf)
    assert (pulled.parent / "LICENSE").read_text() == LICENSE
    assert sha256(pulled.parent / "docker-model-config.json") == pushed.blobs["docker-model-config.json"]

    # llama.cpp serves the mounted weights: the tiny model's own sentence
    [pod] = await predictor_pods(api, namespace, "oci")
    assert pod["spec"]["containers"][0]["image"] == runtime_image
    [claim] = claims(pod)
    assert claim == job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    assert await ask(stack, namespace, svc, model_id) == model.sentence
    assert restarts(pod) == 0, pod["status"]
