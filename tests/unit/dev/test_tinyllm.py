"""The generated tiny models are ordinary GGUF files (the project's own GGUF reader, the one the
cache service runs, parses them), made deterministically from their recipe, with the tokenizer and
chat template a server needs; the answer's tokens form a chain of distinct tokens."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from aim_cache_jobs.gguf import read_local, status_fields
from aim_dev import llamacpp, tinyllm


@pytest.mark.parametrize("model", [tinyllm.MODEL_A, tinyllm.MODEL_B], ids=lambda m: m.name)
def test_the_projects_gguf_reader_parses_a_generated_model(model: tinyllm.TinyModel, tmp_path: Path) -> None:
    path = tinyllm.write(model, tmp_path / model.filename)
    header = read_local(path)
    fields = status_fields(header)
    assert fields["architecture"] == "llama"
    assert fields["quantization"] == model.dtype
    assert fields["contextLength"] == model.n_ctx
    assert fields["embeddingSize"] == model.n_embd
    assert fields["layerCount"] == model.n_layer
    assert fields["headCount"] == model.n_head
    assert fields["tensorCount"] == 3 + 9 * model.n_layer
    md = header.metadata
    assert md["tokenizer.ggml.model"] == "llama"
    assert "<|im_start|>" in md["tokenizer.chat_template"]
    assert md["tokenizer.ggml.eos_token_id"] == tinyllm.vocabulary().id(tinyllm.IM_END)


def test_a_model_is_the_same_bytes_every_time_and_ensure_rewrites_only_what_changed(tmp_path: Path) -> None:
    first = tinyllm.write(tinyllm.MODEL_A, tmp_path / "one.gguf").read_bytes()
    assert tinyllm.write(tinyllm.MODEL_A, tmp_path / "two.gguf").read_bytes() == first
    assert tinyllm.write(tinyllm.MODEL_B, tmp_path / "b.gguf").read_bytes() != first

    [path] = tinyllm.ensure(tmp_path / "models", (tinyllm.MODEL_A,)).values()
    assert path.read_bytes() == first
    made = path.stat().st_mtime_ns
    tinyllm.ensure(tmp_path / "models", (tinyllm.MODEL_A,))
    assert path.stat().st_mtime_ns == made  # up to date: not written again
    path.write_bytes(b"damaged")
    path.with_name(f".{path.name}.recipe").write_text("another recipe")
    tinyllm.ensure(tmp_path / "models", (tinyllm.MODEL_A,))
    assert path.read_bytes() == first


def test_an_answer_is_a_chain_of_distinct_tokens_that_all_are_in_the_vocabulary() -> None:
    assert tinyllm.answer_pieces("Hello from tiny model A, served by llama.cpp.") == [
        "Hello",
        "\u2581from",
        "\u2581tiny",
        "\u2581model",
        "\u2581A",
        ",",
        "\u2581served",
        "\u2581by",
        "\u2581llama.cpp",
        ".",
    ]
    vocab = tinyllm.vocabulary()
    for model in tinyllm.MODELS.values():
        for piece in tinyllm.answer_pieces(model.sentence):
            assert vocab.id(piece) >= 0
    with pytest.raises(ValueError, match="repeats"):
        tinyllm.answer_pieces("A cat saw a cat.")


def test_the_image_pins_the_runtime_the_workspace_locks() -> None:
    assert importlib.metadata.version("xllamacpp") == llamacpp.XLLAMACPP
    env, labels = llamacpp.model_config(tinyllm.MODEL_B)
    assert env == {"AIM_MODEL_ID": "aim-tiny/tiny-llama-b"}
    assert '"precision":"int8"' in labels["com.amd.aim.model.recommendedDeployments"]
