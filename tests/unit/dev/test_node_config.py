"""The real node's configuration (pure rendering), forwarding specs, and the image input hashes
that decide when a cached image is rebuilt."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from aim_dev import images
from aim_dev.node import config
from aim_dev.node.forward import Endpoint, Forward

LAYOUT = config.Layout("aim-node-0123abcd", Path("/tmp/n1"), "vm", 41234)


def test_containerd_keeps_everything_in_the_nodes_directory() -> None:
    conf = tomllib.loads(config.containerd_config(LAYOUT))
    assert conf["root"] == "/tmp/n1/containerd/root"
    assert conf["state"] == "/tmp/n1/containerd/state"
    assert conf["grpc"]["address"] == "/tmp/n1/containerd/containerd.sock"
    assert conf["plugins"]["io.containerd.internal.v1.opt"]["path"] == "/tmp/n1/containerd/opt"
    cri = conf["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True  # no CAP_SYS_RESOURCE here
    assert cri["sandbox_image"] == config.PAUSE_IMAGE == images.PAUSE_REF
    assert cri["cni"]["conf_dir"] == "/tmp/n1/cni/net.d"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert "registry" not in cri  # containerd's defaults: HTTPS everywhere


def test_containerd_pulls_from_the_named_local_registries_over_plain_http() -> None:
    conf = tomllib.loads(config.containerd_config(LAYOUT, ("127.0.0.1:5000", "10.244.76.1:5001")))
    mirrors = conf["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["mirrors"]
    assert mirrors == {
        "127.0.0.1:5000": {"endpoint": ["http://127.0.0.1:5000"]},
        "10.244.76.1:5001": {"endpoint": ["http://10.244.76.1:5001"]},
    }


def test_kubelet_uses_the_nodes_cgroup_root_port_and_directories() -> None:
    conf = yaml.safe_load(config.kubelet_config(LAYOUT))
    assert conf["cgroupRoot"] == "/aim-node-0123abcd"
    assert conf["cgroupDriver"] == "cgroupfs"
    assert conf["port"] == 41234
    assert conf["address"] == "127.0.0.1"
    assert conf["staticPodPath"].startswith("/tmp/n1/")
    assert conf["volumePluginDir"].startswith("/tmp/n1/")  # else /usr/libexec/kubernetes on the host
    assert conf["protectKernelDefaults"] is False


def test_cni_pods_get_the_pod_subnet_on_a_bridge_and_ipam_state_in_the_node() -> None:
    conf = json.loads(config.cni_conflist(LAYOUT))
    bridge = conf["plugins"][0]
    assert bridge["type"] == "bridge" and bridge["ipMasq"] is False
    assert bridge["ipam"]["ranges"] == [[{"subnet": config.POD_SUBNET}]]
    assert bridge["ipam"]["dataDir"] == "/tmp/n1/cni/ipam"


def test_holder_covers_host_paths_with_the_nodes_own() -> None:
    script = config.holder_script(LAYOUT)
    for target in config.FAKE_SYSCTLS:
        assert f"mount --bind /tmp/n1/fake-sysctl/{Path(target).name} {target}" in script
    assert "mount -t tmpfs -o mode=755 tmpfs /run" in script
    assert "mount --bind /tmp/n1/varlog/pods /var/log/pods" in script
    assert "mount --bind /tmp/n1/cni/cache /var/lib/cni" in script
    # the ready mark comes after every mount, and the holder keeps the node's id in its name
    assert script.index("touch /tmp/n1/holder.ready") > script.rindex("mount ")
    assert script.rstrip().endswith("exec -a aim-node-0123abcd-holder sleep infinity")


def test_forward_specs_round_trip_and_refuse_nonsense() -> None:
    fwd = Forward.parse("node:10.0.0.1:443=host:127.0.0.1:6443")
    assert fwd == Forward(Endpoint("node", "10.0.0.1", 443), Endpoint("host", "127.0.0.1", 6443))
    assert Forward.parse(str(fwd)) == fwd
    for bad in ("node:1.2.3.4:1", "moon:1.2.3.4:1=host:1.2.3.4:2", "node:1.2.3.4:x=host:1.2.3.4:2"):
        with pytest.raises(ValueError):
            Forward.parse(bad)


def _repo(tmp_path: Path) -> Path:
    for name, text in {
        "Dockerfile": "FROM x\n",
        ".dockerignore": ".venv\n",
        "pyproject.toml": "[project]\n",
        "uv.lock": "lock\n",
        "libs/aimcore/src/aimcore/__init__.py": "A = 1\n",
        "libs/aim-dev/src/aim_dev/__init__.py": "D = 1\n",
        "services/deployer/src/aim_deployer/main.py": "print(1)\n",
        "services/status/src/aim_status/main.py": "print(1)\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_service_image_changes_with_its_sources_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")

    def inputs(name: str = "service-deployer") -> str:
        return images.Builder(tmp_path / "cache", repo).inputs(name)

    first = inputs()
    assert inputs() == first
    (repo / "libs/aimcore/src/aimcore/__pycache__").mkdir()
    (repo / "libs/aimcore/src/aimcore/__pycache__/x.cpython-311.pyc").write_bytes(b"\0")
    (repo / "libs/aimcore/.venv").mkdir()
    (repo / "libs/aimcore/.venv/junk").write_text("x")
    assert inputs() == first
    # another service's code, and the tooling, are not in the deployer's image
    status = inputs("service-status")
    (repo / "services/status/src/aim_status/main.py").write_text("print(2)\n")
    (repo / "libs/aim-dev/src/aim_dev/__init__.py").write_text("D = 2\n")
    assert inputs() == first and inputs("service-status") != status
    (repo / "libs/aimcore/src/aimcore/__init__.py").write_text("A = 2\n")
    second = inputs()
    assert second != first
    (repo / "uv.lock").write_text("lock 2\n")
    assert inputs() != second


def test_an_image_is_stale_when_its_base_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path / "repo")
    before = images.Builder(tmp_path / "cache", repo).inputs("test-model")
    monkeypatch.setattr(images, "BASE_PACKAGES", (*images.BASE_PACKAGES, "curl"))
    assert images.Builder(tmp_path / "cache", repo).inputs("test-model") != before


def test_up_to_date_needs_the_recorded_inputs_and_the_tarball(tmp_path: Path) -> None:
    builder = images.Builder(tmp_path / "cache", _repo(tmp_path / "repo"))
    builder.cache.mkdir()
    assert not builder.up_to_date("base")
    (builder.cache / "base.json").write_text(json.dumps({"inputs": builder.inputs("base")}))
    assert not builder.up_to_date("base")  # no tarball
    builder.tarball("base").write_bytes(b"tar")
    assert builder.up_to_date("base")
    (builder.cache / "base.json").write_text(json.dumps({"inputs": "old"}))
    assert not builder.up_to_date("base")


def test_missing_tarballs_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"images not built: pause.*bootstrap"):
        images.tarballs(["pause"], cache=tmp_path)
