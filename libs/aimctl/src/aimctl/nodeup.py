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


def _watch_discovery(kubeconfig: Path, deadline: float) -> bool:
    """Show the discovery Job while it exists (the operator deletes it once its output is read):
    its line when it completed, and its log, the image's dry-run output."""
    shown = False
    while time.monotonic() < deadline:
        listing = binaries.run_kubectl(
            "get", "jobs", "-n", "default", "-l", DISCOVERY_JOBS, "-o", "json", kubeconfig=kubeconfig
        )
        jobs = json.loads(listing.stdout or "{}").get("items") or []
        done = [j for j in jobs if (j.get("status") or {}).get("succeeded")]
        if done:
            name = done[0]["metadata"]["name"]
            print(f"$ kubectl get job {name} -n default")
            print(_kubectl(kubeconfig, "get", "job", name, "-n", "default"))
            print(f"$ kubectl logs job/{name} -n default   (the model image's dry-run --format=json)")
            print(_kubectl(kubeconfig, "logs", f"job/{name}", "-n", "default"))
            return True
        if not shown and jobs:
            print(f"discovery Job {jobs[0]['metadata']['name']} is running on the node ...", flush=True)
            shown = True
        template_ready = _kubectl(
            kubeconfig,
            "get",
            "aimservicetemplates",
            "-n",
            "default",
            "-o",
            "jsonpath={.items[*].status.status}",
        )
        if "Ready" in template_ready.split() and not jobs:
            return False  # done between two looks; the Events below still show it
        time.sleep(0.2)
    return False


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
    _watch_discovery(kubeconfig, deadline)
    _show(kubeconfig, "get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Job")
    while time.monotonic() < deadline:
        status = _kubectl(
            kubeconfig, "get", "aimsvc", "tiny-chat", "-n", "default", "-o", "jsonpath={.status.status}"
        )
        if status in ("Running", "Failed"):
            break
        time.sleep(0.5)
    _show(kubeconfig, "get", "aimmodels,aimservicetemplates", "-n", "default")
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
