"""``aimctl images build [--push REGISTRY --overlay DIR]``: the operator's images built and pushed in
one step, and a kustomize overlay that pins each by the digest the registry answered, so that
``kubectl apply -k DIR`` is the whole install (the bus Secrets are made in the cluster by the Job
``aim-bus-credentials``). :mod:`aim_dev.pinned` does the pushing and the writing; the images are
built by :mod:`aim_dev.images` (buildah, no Docker engine; ``scripts/bootstrap.sh`` installs it),
each only when its inputs changed, so this runs from a checkout of the repository.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aim_dev import images, pinned


def cmd_build(args: argparse.Namespace) -> int:
    if args.overlay and not args.push:
        print("aimctl images build: --overlay needs --push (for the digests)", file=sys.stderr)
        return 2
    base = Path(args.base)
    if args.overlay and not (base / pinned.OVERLAY_FILE).is_file():
        print(f"aimctl images build: --base {base} has no {pinned.OVERLAY_FILE}", file=sys.stderr)
        return 2
    builder = images.Builder()
    try:
        for r in builder.build([name for name, _, _ in pinned.wanted(args.runtime)]):
            state = "cached" if r.cached else f"built in {r.seconds} s"
            print(f"{r.name:22} {r.ref:48} {state}", file=sys.stderr)
        if not args.push:
            return 0
        pushed = pinned.push(
            builder, args.push, runtime=args.runtime, pull_from=args.pull_from, insecure=args.insecure
        )
    except (images.BuildFailed, FileNotFoundError) as exc:
        print(f"aimctl images build: {exc}", file=sys.stderr)
        return 1
    for p in pushed:
        print(f"{p.repository}:{p.tag}@{p.digest}")
    if args.overlay:
        path = pinned.write_overlay(base, Path(args.overlay), pushed)
        print(f"wrote {path}: kubectl apply -k {args.overlay}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("images", help="build the operator's images, push them, pin them in an overlay")
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="build the six service images (buildah), optionally push them")
    build.add_argument("--push", metavar="REGISTRY", help="push each to REGISTRY/aim-<service>")
    build.add_argument(
        "--overlay", metavar="DIR", help="with --push: write DIR/kustomization.yaml, each image by digest"
    )
    build.add_argument(
        "--base",
        default="deploy/base",
        metavar="KUSTOMIZATION",
        help="what the overlay builds on (default deploy/base; e.g. deploy/overlays/production)",
    )
    build.add_argument(
        "--insecure", action="store_true", help="plain HTTP, or a certificate not trusted here"
    )
    build.add_argument(
        "--pull-from",
        metavar="REGISTRY",
        help="the name the cluster's nodes pull from, where it differs from --push's (a port-forward)",
    )
    build.add_argument("--runtime", action="store_true", help="also the llama.cpp CPU runtime (aim-llamacpp)")
    build.set_defaults(func=cmd_build)
