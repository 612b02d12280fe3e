"""``aimctl up --control-plane-only`` (docker-compose.yml's other half): the embedded stack starts
etcd, kube-apiserver and kube-controller-manager with the CRDs and nothing else, and writes a
kubeconfig that works as one file anywhere (the CA inline, no path under the user's home) and that
the image's non-root user can read, in a directory other users cannot enter."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import yaml

from aim_dev.local.stack import Stack
from aimctl.main import parser
from tests import helpers


def test_the_flag_parses_and_excludes_node_and_demo() -> None:
    args = parser().parse_args(["up", "--control-plane-only", "--detach"])
    assert args.control_plane_only and args.detach
    for bad in (["up", "--control-plane-only", "--node"], ["up", "--control-plane-only", "--demo"]):
        assert parser().parse_args(bad).func(parser().parse_args(bad)) == 2


def test_control_plane_only(tmp_path: Path) -> None:
    stack = Stack(home=tmp_path / "home", control_plane_only=True)
    try:
        stack.start()
        assert stack.nats is None and stack.services == {} and stack.supervisor is None
        state = json.loads(stack.state_file.read_text())
        assert "nats_url" not in state
        assert set(state["pids"]) == {p.name for p in stack.cluster.processes if p is not None}  # type: ignore[union-attr]
        assert state["compose_kubeconfig"] == str(stack.compose_kubeconfig)

        path = stack.compose_kubeconfig
        assert stat.S_IMODE(path.stat().st_mode) == 0o644  # the image's uid 65532 reads the mounted file
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700  # no other user reaches it
        config = yaml.safe_load(path.read_text())
        (cluster,) = config["clusters"]
        assert "certificate-authority" not in cluster["cluster"]
        assert cluster["cluster"]["certificate-authority-data"]
        # one file, anywhere: a copy far from the stack's home talks to the API server, verified TLS
        elsewhere = tmp_path / "elsewhere" / "config"
        elsewhere.parent.mkdir()
        shutil.copyfile(path, elsewhere)
        crds = helpers.kubectl("get", "crd", "-o", "name", kubeconfig=elsewhere)
        assert "customresourcedefinition.apiextensions.k8s.io/aimservices.aim.eai.amd.com" in crds
        assert helpers.kubectl("get", "namespace", "aim-system", "-o", "name", kubeconfig=elsewhere).strip()
    finally:
        stack.stop()
