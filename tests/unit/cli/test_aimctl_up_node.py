"""``aimctl up --node`` refuses to start without root, with a message that says why and what to do;
``--nodes`` only with it; ``aimctl`` finds the clustered bus's CA the stack kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimctl import main


def test_up_node_needs_root(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main.main(["up", "--node"]) == 2
    out = capsys.readouterr().out
    assert "aimctl up --node needs root" in out
    assert "leave out --node" in out


def test_the_demo_model_is_the_tiny_one_unless_asked() -> None:
    args = main.parser().parse_args(["up", "--node", "--demo"])
    assert args.model == "tiny-llama-a"
    args = main.parser().parse_args(["up", "--node", "--demo", "--model", "gemma3-270m"])
    assert args.model == "gemma3-270m"
    with pytest.raises(SystemExit):
        main.parser().parse_args(["up", "--node", "--demo", "--model", "llama-70b"])


@pytest.mark.parametrize(
    "argv", [["up", "--model", "gemma3-270m"], ["up", "--node", "--model", "gemma3-270m"]]
)
def test_a_model_without_the_node_demo_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(argv) == 2
    assert "--model chooses the model of `aimctl up --node --demo`" in capsys.readouterr().err


def test_the_demo_choices_are_the_node_demos() -> None:
    from aimctl import nodeup  # noqa: PLC0415 - the node mode's module

    assert tuple(nodeup.DEMOS) == main.DEMO_MODELS
    from aim_dev.bench import inference  # noqa: PLC0415 - only the benchmark

    assert tuple(inference.SUBJECTS) == main.BENCH_MODELS


def test_the_gemma_demo_serves_gemma_as_gemma_chat() -> None:
    from aimctl import nodeup  # noqa: PLC0415 - the node mode's module

    model, service = nodeup.demo_manifests("img:1", "http://hub:1", nodeup.DEMOS["gemma3-270m"])
    assert model["kind"] == "AIMModel" and model["metadata"]["name"] == "gemma3-270m"
    assert model["spec"]["image"] == "img:1"
    assert service["metadata"]["name"] == "gemma-chat"
    assert service["spec"]["model"] == {"name": "gemma3-270m"}
    assert service["spec"]["caching"] == {"mode": "Always"}
    assert {"name": "HF_ENDPOINT", "value": "http://hub:1"} in service["spec"]["env"]
    demo = nodeup.DEMOS["gemma3-270m"]
    assert demo.completion is not None and demo.expected == "Paris"
    tiny = nodeup.demo_manifests("img:1", "http://hub:1")
    assert tiny[1]["metadata"]["name"] == "tiny-chat"


def test_bench_inference_takes_a_model() -> None:
    args = main.parser().parse_args(["bench", "inference", "--model", "gemma3-270m"])
    assert args.model == "gemma3-270m" and args.tokens is None


@pytest.mark.parametrize(
    "argv",
    [
        ["up", "--nodes", "3"],  # several nodes are real nodes: --node
        ["up", "--node", "--nodes", "6"],
        ["up", "--node", "--nodes", "3", "--demo"],  # the demo serves a model on one node
    ],
)
def test_several_nodes_need_the_node_mode_a_sane_count_and_no_demo(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(argv) == 2
    assert "--nodes N needs --node, N from 2 to 5, and no --demo" in capsys.readouterr().err


def test_aimctl_reaches_a_clustered_bus_over_tls_with_the_ca_up_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aimctl events` after `aimctl up --node --nodes 3`: the bus is tls:// through every node, and
    the CA the stack kept in $AIM_HOME/nats is trusted without being named."""
    from aimctl import events  # noqa: PLC0415

    monkeypatch.setenv("AIM_HOME", str(tmp_path))
    monkeypatch.delenv("AIM_NATS_TLS_CA_FILE", raising=False)
    assert events.bus_settings("tls://127.0.0.1:1").tls_ca_file is None
    (tmp_path / "nats").mkdir()
    (tmp_path / "nats" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    assert events.bus_settings("tls://127.0.0.1:1").tls_ca_file == str(tmp_path / "nats" / "ca.crt")
    monkeypatch.setenv("AIM_NATS_TLS_CA_FILE", "/elsewhere/ca.crt")  # named: that one
    assert events.bus_settings("tls://127.0.0.1:1").tls_ca_file == "/elsewhere/ca.crt"
