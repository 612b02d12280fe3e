"""The overlay ``aimctl images build --push --overlay`` writes (:mod:`aim_dev.pinned`): rendered with
kustomize, every image deploy/ names is the pushed one by digest (the cache's verify image
included), nothing else changes, and the command refuses what it cannot do before building."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aim_dev import images, pinned
from aim_dev.local import binaries
from aimctl.main import main

REPO = Path(__file__).resolve().parents[3]
BASE = REPO / "deploy" / "base"


def fake_pushes(registry: str) -> list[pinned.Pushed]:
    return [
        pinned.Pushed(repository, f"{registry}/{repository}", f"sha256:{i:064x}", tag)
        for i, (_, repository, tag) in enumerate(pinned.wanted(runtime=True), start=1)
    ]


def images_of(rendered: str) -> list[str]:
    found = []
    for doc in yaml.safe_load_all(rendered):
        pod = ((doc or {}).get("spec") or {}).get("template", {}).get("spec")
        if pod:
            found += [c["image"] for c in pod.get("initContainers", []) + pod["containers"]]
    return found


def test_every_image_of_the_operator_is_pinned_by_the_digest_pushed(tmp_path: Path) -> None:
    pushed = fake_pushes("registry.example.com/team")
    overlay = tmp_path / "clusters" / "prod"
    path = pinned.write_overlay(BASE, overlay, pushed)
    assert path == overlay / "kustomization.yaml"
    written = yaml.safe_load(path.read_text())
    (resource,) = written["resources"]
    assert not Path(resource).is_absolute() and (overlay / resource).resolve() == BASE.resolve()
    rendered = binaries.kustomize_build(overlay)
    digests = {p.name: f"{p.repository}@{p.digest}" for p in pushed}
    ours = [i for i in images_of(rendered) if not i.startswith("nats:")]
    assert ours and all(i in digests.values() for i in ours), ours
    assert {i.split("@")[0].rsplit("/", 1)[1] for i in ours} == {f"aim-{s}" for s in images.SERVICES}
    assert digests["aim-llamacpp"] not in rendered  # the runtime is for model images, not deploy/'s
    assert f"aim-llmkube-verify-image: {digests['aim-cache']}" in rendered
    # nothing but the images differs from the base
    base = binaries.kustomize_build(BASE)
    for p in pushed[:-1]:
        rendered = rendered.replace(f"{p.repository}@{p.digest}", f"{p.name}:{p.tag}")
    assert rendered == base


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--overlay", "out"], "--overlay needs --push"),
        (["--push", "r.example", "--overlay", "out", "--base", "deploy"], "has no kustomization.yaml"),
    ],
)
def test_what_cannot_be_done_is_refused_before_building(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["images", "build", *argv]) == 2
    assert said in capsys.readouterr().err
