#!/usr/bin/env bash
# Bring the whole system up on this machine and show it working, then stay up until Ctrl-C.
#
# As root (the machine the README names) it runs the operator on a real node (kubelet, containerd
# and the six services as Pods, docs/node.md), and its demo ends with a real model's answer: a tiny
# llama model cached by a real download Job, loaded by llama.cpp in a predictor pod, asked through
# the address its AIMService's status gives. `--no-node` (or AIM_UP_NODE=0) runs the no-kubelet
# stack instead (local control plane, NATS, the services as processes: up in seconds, nothing
# serves a model). Without root the node cannot run, and the no-kubelet stack is what you get.
# scripts/preflight.sh first checks what the machine needs (Debian's apt, Python 3.11, free disk;
# for the node root and cgroup v1) and says what to do, before anything is installed or built.
# Extra args go to `aimctl up` (e.g. --detach).
set -euo pipefail
cd "$(dirname "$0")/.."
node="${AIM_UP_NODE:-auto}"
args=()
for arg in "$@"; do
  case "$arg" in
    --node) node=1 ;;
    --no-node) node=0 ;;
    *) args+=("$arg") ;;
  esac
done
if [ "$node" = auto ]; then
  if [ "$(id -u)" = 0 ]; then
    node=1
  else
    node=0
    echo "[up] not root: skipping the real node (kubelet, containerd, the operator as Pods, a model" \
      "that answers); the no-kubelet stack instead, where nothing serves a model. As root:" \
      "./scripts/up.sh (docs/node.md)." >&2
  fi
fi
if [ "$node" = 1 ]; then
  bash scripts/preflight.sh node
  bash scripts/bootstrap.sh
else
  bash scripts/preflight.sh no-node
  AIM_BOOTSTRAP_NODE=0 bash scripts/bootstrap.sh
fi
python3 -m uv sync --frozen --quiet
if [ "$node" = 1 ]; then
  exec python3 -m uv run aimctl up --node --demo ${args[@]+"${args[@]}"}
fi
exec python3 -m uv run aimctl up --demo ${args[@]+"${args[@]}"}
