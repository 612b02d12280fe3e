"""docs/quickstart.md on the real node: the operator installed by one push and one apply, with no
Secret step of the user's, then the page's smallest AIMService Running and its address answering.

The session's stack installs the operator as the page says (``aim_dev.local.deployed``: the images
pushed to the stack's registry and pinned by digest in the overlay ``aimctl images build --push``
writes, ``kustomize build`` of it applied, the bus Secrets made by the Job ``aim-bus-credentials``);
this test checks that this is what runs, then applies the AIMService from the page's own YAML, with
what the node needs in place of a GPU cluster: the tiny llama.cpp model's image instead of a GPU
model's, and its unoptimized templates allowed. Its weights are on the stack's Hub server, which
the image's discovery and its pods must be told of: an AIMModel of that image with the Hub in its
env, made first (as the demo of ``aimctl up`` does), which the service's ``model.image`` resolves
to (a model users made is preferred to one the service would make)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aim_dev import tinyllm
from aim_dev.local import deployed
from aim_dev.local.nodestack import REGISTRY, NodeStack
from aimcore.api.bus.secrets import DEPLOYED_ROLES, secret_name
from aimcore.api.kinds import DEPLOYMENT, JOB, SECRET
from aimcore.runtime import Kube
from tests.helpers import kubectl
from tests.node.helpers import NODE_TIMEOUT, hub_env
from tests.node.test_operator_inference import MODEL, SERVICE, ask, running

pytestmark = pytest.mark.timeout(NODE_TIMEOUT)

QUICKSTART = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


def the_pages_aimservice() -> dict[str, Any]:
    """The AIMService of docs/quickstart.md, as a reader would copy it."""
    found = [
        doc
        for block in YAML_BLOCK.findall(QUICKSTART.read_text())
        for doc in yaml.safe_load_all(block)
        if doc and doc.get("kind") == "AIMService"
    ]
    assert len(found) == 1, f"docs/quickstart.md should show one AIMService, shows {len(found)}"
    return found[0]


async def test_the_operator_runs_from_the_pinned_overlay_with_secrets_the_job_made(
    stack: NodeStack, api: Kube
) -> None:
    overlay = yaml.safe_load((stack.home / "install" / "kustomization.yaml").read_text())
    pinned = {i["name"]: f"{i['newName']}@{i['digest']}" for i in overlay["images"]}
    assert set(pinned) == {f"aim-{s}" for s in deployed.SERVICES}
    assert all(ref.startswith(f"{REGISTRY}/") for ref in pinned.values())
    for name, reference in pinned.items():
        deployment = await api.get(DEPLOYMENT, deployed.SYSTEM_NAMESPACE, name)
        assert deployment is not None, name
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == reference
    job = await api.get(JOB, deployed.SYSTEM_NAMESPACE, "aim-bus-credentials")
    assert job is not None and job["status"].get("succeeded") == 1, job and job["status"]
    # every bus Secret was made by the Job (its field manager), none by the stack (``aimctl``);
    # a key rotated by an earlier test adds kubectl's own entry, as a user's rotation does
    for role in DEPLOYED_ROLES:
        secret = await api.get(SECRET, deployed.SYSTEM_NAMESPACE, secret_name(role))
        assert secret is not None, role
        managers = {f["manager"] for f in secret["metadata"].get("managedFields") or []}
        assert "aim-bus-credentials" in managers and "aimctl" not in managers, (role, managers)


async def test_the_pages_smallest_aimservice_runs_and_its_address_answers(
    stack: NodeStack, api: Kube, namespace: str
) -> None:
    model = tinyllm.MODEL_A
    page = the_pages_aimservice()
    assert set(page["spec"]) == {"model"} and set(page["spec"]["model"]) == {"image"}, page["spec"]
    image = stack.push_tiny_model(model)
    curated = {"apiVersion": MODEL.api_version, "kind": MODEL.kind, "metadata": {"name": "tiny-a"}}
    env = hub_env(stack.hub_endpoint)
    await api.create(MODEL, {**curated, "spec": {"image": image, "env": env}}, namespace)
    body = copy.deepcopy(page)
    body["metadata"]["namespace"] = namespace
    body["spec"]["model"]["image"] = image
    body["spec"]["env"] = env
    body["spec"]["template"] = {"allowUnoptimized": True}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(body), kubeconfig=stack.kubeconfig)

    svc = await running(api, namespace, page["metadata"]["name"])
    assert svc["apiVersion"] == SERVICE.api_version
    assert svc["status"]["resolvedModel"]["name"] == "tiny-a", svc["status"].get("resolvedModel")
    assert await ask(stack, namespace, svc, model.repo) == model.sentence
