#!/usr/bin/env bash
# What `up.sh` needs from the machine, checked before it spends minutes installing and building:
# each unmet need is named with what to do about it, and the run stops (exit 2) before anything
# is installed. Usage: preflight.sh node|no-node (the real node needs more than the no-kubelet
# stack). AIM_PREFLIGHT_MIN_FREE_GB overrides the free space asked for (in GiB).
set -euo pipefail
mode="${1:-node}"
problems=()

# Debian's package manager: bootstrap.sh installs etcd, the Kubernetes source package, Go and the
# node's tools from it.
if ! command -v apt-get >/dev/null 2>&1; then
  problems+=("apt-get not found: bootstrap.sh installs its packages from Debian 12's archive (a Debian 12 machine, or one with its apt sources)")
fi

# Python 3.11+ runs uv and the workspace (pyproject's requires-python).
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  problems+=("python3 3.11 or newer is needed (found: $(python3 --version 2>&1 || echo none))")
fi

# Free space where the caches go: the Kubernetes build tree and its Go cache, the binaries, the
# node's images and models (7.6 GiB measured after a first bootstrap on 2026-11-30, and uv's 0.7 GiB)
# with room to spare for containerd's snapshots and the stacks' volumes.
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}"
need_gb="${AIM_PREFLIGHT_MIN_FREE_GB:-}"
if [ -z "$need_gb" ]; then
  if [ "$mode" = node ]; then need_gb=20; else need_gb=8; fi
fi
if [ -d "$cache_root/aim-engine/bin" ] && [ -f "$cache_root/aim-engine/bin/build-stamp" ]; then
  need_gb=$(( need_gb / 4 ))  # the heavy part is built already
fi
probe="$cache_root"
while [ ! -d "$probe" ]; do probe="$(dirname "$probe")"; done
free_kb=$(df -Pk "$probe" | awk 'NR == 2 {print $4}')
if [ "$(( free_kb / 1024 / 1024 ))" -lt "$need_gb" ]; then
  problems+=("$(( free_kb / 1024 / 1024 )) GiB free under $probe, $need_gb GiB needed (the caches go to \$XDG_CACHE_HOME/aim-engine: point XDG_CACHE_HOME at a larger disk, or free some space)")
fi

if [ "$mode" = node ]; then
  if [ "$(id -u)" != 0 ]; then
    problems+=("the real node needs root (network and mount namespaces, cgroups, containerd): run as root, or ./scripts/up.sh --no-node for the stack without a kubelet")
  fi
  # The kubelet 1.20 here runs with the cgroupfs driver on cgroup v1 hierarchies (docs/node.md).
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    problems+=("this machine boots cgroup v2 only (/sys/fs/cgroup is cgroup2fs); the node's kubelet 1.20 needs cgroup v1: boot with systemd.unified_cgroup_hierarchy=0 on the kernel command line (Debian 12: add it to GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot), or ./scripts/up.sh --no-node")
  fi
fi

if [ "${#problems[@]}" -gt 0 ]; then
  echo "[preflight] this machine cannot run ./scripts/up.sh ($mode) yet:" >&2
  for p in "${problems[@]}"; do echo "  - $p" >&2; done
  exit 2
fi
