"""``aimctl up --node``: the embedded stack with a real node (docs/node.md), and its demo.

The operator runs as users run it, from ``deploy/`` (NATS and the six services as Pods); with
``--demo`` an AIMService of the test model image (pushed to the node's registry) goes all the way:
its template's discovery Job runs the image's dry-run on the node, the KServe stand-in starts the
predictor pod, and the service turns ``Running``. Root only: the node needs network and mount
namespaces and cgroups.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import yaml

from aim_dev import testmodel
from aim_dev.local import binaries
from aim_dev.local.deployed import SERVICES, DeployFailed
from aim_dev.local.nodestack import NodeStack
from aim_dev.node import NodeError

DISCOVERY_JOBS = "app.kubernetes.io/name=aim-discovery"
PREDICTORS = "serving.kserve.io/inferenceservice"


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = binaries.run_kubectl(*args, kubeconfig=kubeconfig, stdin=stdin)
    return (done.stdout.strip() or done.stderr.strip()) if done.returncode == 0 else done.stderr.strip()


def _show(kubeconfig: Path, *args: str) -> str:
    print(f"$ kubectl {' '.join(args)}")
    text = _kubectl(kubeconfig, *args)
    print(text)
    return text


def demo_service(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "tiny-chat", "namespace": "default"},
        # the test model's one profile is unoptimized: a CPU stand-in for an AIM image
        "spec": {"model": {"image": image}, "template": {"allowUnoptimized": True}},
    }


def _pods(kubeconfig: Path, selector: str) -> list[dict[str, Any]]:
    done = binaries.run_kubectl(
        "get", "pods", "-n", "default", "-l", selector, "-o", "json", kubeconfig=kubeconfig
    )
    items: list[dict[str, Any]] = json.loads(done.stdout or "{}").get("items") or []
    return items


def _exit(pod: dict[str, Any]) -> str:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated:
            return f"exit code {terminated.get('exitCode')} ({terminated.get('reason')})"
    return "running"


def _watch_discovery(kubeconfig: Path, deadline: float) -> str | None:
    """Follow the discovery Job's pod on the node until it is gone (the operator deletes the Job
    once it has read its output), showing what was seen and its log; returns the pod's name."""
    seen: dict[str, Any] | None = None
    log = ""
    while time.monotonic() < deadline:
        pods = _pods(kubeconfig, DISCOVERY_JOBS)
        if pods:
            if seen is None:
                print(f"discovery Job pod {pods[0]['metadata']['name']} created ...", flush=True)
            seen = pods[0]
            if (seen.get("status") or {}).get("phase") == "Succeeded" and not log:
                log = _kubectl(kubeconfig, "logs", seen["metadata"]["name"], "-n", "default")
        elif seen is not None:
            break  # the Job and its pod are gone: the operator has the output
        time.sleep(0.2)
    if seen is None:
        return None
    name = str(seen["metadata"]["name"])
    job = (seen["metadata"].get("labels") or {}).get("job-name", "?")
    phase = (seen.get("status") or {}).get("phase")
    print(f"job/{job}: pod {name} ran on node {seen['spec'].get('nodeName')}: {phase}, {_exit(seen)}")
    if log.startswith("["):
        print(f"$ kubectl logs {name} -n default   (the image's dry-run --format=json)\n{log}")
    return name


def demo(stack: NodeStack, timeout: float = 300.0) -> bool:
    kubeconfig = stack.kubeconfig
    print("\n$ push the test model image to the node's registry (its labels carry recommended deployments)")
    image = stack.push_model("test-model", "aim/test-model", testmodel.VERSION)
    print(image)
    print("\n$ kubectl apply -f - <<EOF (an AIMService of that image)")
    print(
        _kubectl(
            kubeconfig, "apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(demo_service(image))
        )
    )
    deadline = time.monotonic() + timeout
    pod = _watch_discovery(kubeconfig, deadline)
    _show(kubeconfig, "get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Job")
    if pod:
        _show(kubeconfig, "get", "events", "-n", "default", "--field-selector", f"involvedObject.name={pod}")
    while time.monotonic() < deadline:
        status = _kubectl(
            kubeconfig, "get", "aimsvc", "tiny-chat", "-n", "default", "-o", "jsonpath={.status.status}"
        )
        if status in ("Running", "Failed"):
            break
        time.sleep(0.5)
    _show(kubeconfig, "get", "aimmodels,aimservicetemplates", "-n", "default")
    profile = "jsonpath={.items[0].status.profile.metadata}"
    _show(kubeconfig, "get", "aimservicetemplates", "-n", "default", "-o", profile)
    _show(kubeconfig, "get", "inferenceservices,deployments", "-n", "default")
    pods = _show(kubeconfig, "get", "pods", "-n", "default", "-o", "wide", "-l", PREDICTORS)
    services = _show(kubeconfig, "get", "aimsvc", "-n", "default")
    return "Running" in pods and "Running" in services


def cmd_up_node(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print(
            "aimctl up --node needs root: the node runs containerd and a kubelet in network and mount "
            "namespaces and cgroups of their own (docs/node.md). Run it as root, or leave out --node "
            "for the no-kubelet mode."
        )
        return 2
    stack = NodeStack(detach=args.detach)
    print(f"Starting the AIM operator on a real node in {stack.home} ...", flush=True)
    started = time.monotonic()
    try:
        stack.start()
    except (NodeError, DeployFailed, FileNotFoundError) as exc:
        print(f"error: {exc}")
        return 1
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
    ok = demo(stack) if args.demo else True
    if args.detach:
        print("\nRunning in the background; `aimctl down` stops it and removes the node.")
        return 0 if ok else 1
    print("\nPress Ctrl-C to stop.", flush=True)
    stop = [False]

    def on_signal(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        stack.supervise(stop)
    finally:
        print("Stopping ...", flush=True)
        stack.stop()
    return 0 if ok else 1
