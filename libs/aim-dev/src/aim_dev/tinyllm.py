"""Tiny llama-architecture GGUF models made here, whose weights make a real forward pass answer one
fixed sentence each.

No model hub is reachable from this machine and no test may need one, yet the real node must show a
model the operator found, cached, mounted and deployed *answering*: so the models are generated,
deterministically, with the ``gguf`` package (llama.cpp's own gguf-py). Each file is an ordinary
llama GGUF that llama.cpp loads and runs: token embeddings, ``block_count`` transformer blocks
(RMSNorm, attention with RoPE, SwiGLU feed-forward), the output norm and head, an embedded
SentencePiece-style tokenizer (byte fallback, ``<unk>``/``<s>``/``</s>``, ChatML's ``<|im_start|>``
and ``<|im_end|>`` as control tokens, one piece per word of the sentences) and a ChatML chat
template.

How the weights answer: the residual stream of a token starts as its embedding; the answer's
tokens (and the token a chat prompt ends with, ``\\n`` after ``<|im_start|>assistant``) get
orthogonal embeddings, and the output head maps each of them, with a logit margin of about 80, to
the next token of the sentence (the last to ``<|im_end|>``, the end of generation). The attention and
feed-forward weights are small random matrices: they run and add to the residual stream (the whole
graph is computed for every token), but cannot overturn that margin, so greedy and sampled decoding
(any usual temperature) both give the sentence, whatever the question. A model with ``cycle`` set
also maps ``<|im_end|>`` back to the first word, and the last word to the first with half the
margin (what wins when ``ignore_eos`` masks the end of generation), so a request with ``ignore_eos``
repeats the sentence for as many tokens as it asks for (the inference benchmark's long answers).

:data:`MODELS` is the catalogue (two small models with different sentences, a larger one for
tokens/s); :func:`write` makes one file, :func:`ensure` makes them all under a directory, rewriting
only what is missing or differs from the recipe.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import itertools
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import gguf
import numpy as np

from aim_dev.local import binaries

ARCH = "llama"
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
UNK, BOS, EOS_PLAIN = "<unk>", "<s>", "</s>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
PROMPT_END = "<0x0A>"
"""The token a ChatML prompt ends with (``\\n``: no piece of the vocabulary holds it)."""
SPACE = "\u2581"
"""SentencePiece's word-boundary mark."""
LOGIT = 10.0
"""The output head's weight from an answer token to its successor (times √n_embd after the norm)."""
NOISE = 0.02
"""Standard deviation of the random attention, feed-forward and head weights at ``n_embd`` 64,
scaled by ``(64 / n_embd) ** 0.75`` (what a block adds to the residual grows as ``std² · n_embd^1.5``)."""
AMPLITUDE = 4.0
"""The norm of an answer token's embedding (the blocks see it normalised, so it only outweighs what
they add to the residual stream)."""


@dataclass(frozen=True)
class TinyModel:
    """One generated model: where the Hub serves it and what it answers."""

    repo: str
    """The Hub repository id (``org/name``)."""
    sentence: str
    """What it answers: words separated by single spaces; a trailing punctuation mark is its own
    token. No token may repeat (the answer is a chain of distinct tokens)."""
    dtype: str = "F16"
    """``F16`` or ``Q8_0`` (precisions an AIM profile can name: fp16, int8), or ``F32``: the type of
    the matrices (norms stay F32) and ``general.file_type``."""
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_ff: int = 128
    n_ctx: int = 2048
    cycle: bool = False
    seed: int = 0

    @property
    def filename(self) -> str:
        return f"{self.repo.split('/')[-1]}-{self.dtype.lower()}.gguf"

    @property
    def name(self) -> str:
        return self.repo.split("/")[-1]


MODEL_A = TinyModel("aim-tiny/tiny-llama-a", "Hello from tiny model A, served by llama.cpp.", seed=1)
MODEL_B = TinyModel(
    "aim-tiny/tiny-llama-b", "Greetings! Tiny model B answers with its own weights.", dtype="Q8_0", seed=2
)
MODEL_BENCH = TinyModel(
    "aim-tiny/tiny-llama-bench",
    "Benchmark model reporting: every token here costs one full forward pass.",
    dtype="F16",
    n_embd=512,
    n_layer=8,
    n_head=8,
    n_ff=1536,
    n_ctx=4096,
    cycle=True,
    seed=3,
)
MODELS: dict[str, TinyModel] = {m.repo: m for m in (MODEL_A, MODEL_B, MODEL_BENCH)}

# -- tokenizer ----------------------------------------------------------------------------------


def answer_pieces(sentence: str) -> list[str]:
    """The tokens of an answer: the first word as is (no leading space in the output), the others
    with the word-boundary mark, trailing punctuation split off."""
    pieces: list[str] = []
    for i, text in enumerate(sentence.split(" ")):
        word = text.rstrip(".,!?:;")
        if word:
            pieces.append(word if i == 0 else SPACE + word)
        pieces.extend(text[len(word) :])
    if len(set(pieces)) != len(pieces):
        raise ValueError(f"a token repeats in {sentence!r}: {pieces}")
    return pieces


@dataclass(frozen=True)
class Vocabulary:
    tokens: list[str]
    types: list[int]
    scores: list[float]

    def id(self, piece: str) -> int:
        return self.tokens.index(piece)


def vocabulary(models: tuple[TinyModel, ...] = tuple(MODELS.values())) -> Vocabulary:
    """One vocabulary for every model (so any prompt tokenizes the same way in each): special
    tokens, the 256 byte tokens, printable ASCII characters and the word boundary as single
    pieces, then the answers' pieces."""
    tokens = [UNK, BOS, EOS_PLAIN]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    tokens += [IM_START, IM_END]
    types += [gguf.TokenType.CONTROL] * 2
    singles = [SPACE] + [chr(c) for c in range(0x21, 0x7F)]
    words = sorted({p for m in models for p in answer_pieces(m.sentence)} - set(singles))
    tokens += singles + words
    types += [gguf.TokenType.NORMAL] * (len(singles) + len(words))
    scores = [0.0] * 3 + [0.0] * 256 + [0.0] * 2 + [-1.0] * len(singles) + [-float(len(w)) for w in words]
    return Vocabulary(tokens, [int(t) for t in types], scores)


# -- weights ------------------------------------------------------------------------------------


def _tensors(model: TinyModel, vocab: Vocabulary) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(model.seed)
    d, n_vocab = model.n_embd, len(vocab.tokens)
    chain = [PROMPT_END, *answer_pieces(model.sentence), IM_END]
    ids = [vocab.id(p) for p in chain]
    if len(ids) - 1 > d:
        raise ValueError(f"{model.repo}: the answer needs more than n_embd={d} directions")

    std = NOISE * (64 / d) ** 0.75

    def noise(*shape: int) -> np.ndarray:
        values: np.ndarray = (rng.standard_normal(shape) * std).astype(np.float32)
        return values

    # Every token a random direction of norm 1; the chain's tokens (but the last) a basis vector.
    embd = rng.standard_normal((n_vocab, d)).astype(np.float32)
    embd /= np.linalg.norm(embd, axis=1, keepdims=True)
    out = noise(n_vocab, d)
    links = list(itertools.pairwise(ids))
    if model.cycle:
        links.append((vocab.id(IM_END), ids[1]))
    for axis, (token, successor) in enumerate(links):
        embd[token] = 0.0
        embd[token, axis] = AMPLITUDE
        out[successor, axis] = LOGIT
    if model.cycle:  # with ignore_eos the end of generation is masked: the first word comes next
        out[ids[1], len(links) - 2] = LOGIT / 2
    tensors: dict[str, np.ndarray] = {
        "token_embd.weight": embd,
        "output_norm.weight": np.ones(d, dtype=np.float32),
        "output.weight": out,
    }
    for b in range(model.n_layer):
        tensors |= {
            f"blk.{b}.attn_norm.weight": np.ones(d, dtype=np.float32),
            f"blk.{b}.attn_q.weight": noise(d, d),
            f"blk.{b}.attn_k.weight": noise(d, d),
            f"blk.{b}.attn_v.weight": noise(d, d),
            f"blk.{b}.attn_output.weight": noise(d, d),
            f"blk.{b}.ffn_norm.weight": np.ones(d, dtype=np.float32),
            f"blk.{b}.ffn_gate.weight": noise(model.n_ff, d),
            f"blk.{b}.ffn_up.weight": noise(model.n_ff, d),
            f"blk.{b}.ffn_down.weight": noise(d, model.n_ff),
        }
    return tensors


# -- files --------------------------------------------------------------------------------------

FILE_TYPES = {
    "F32": gguf.LlamaFileType.ALL_F32,
    "F16": gguf.LlamaFileType.MOSTLY_F16,
    "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
}


def write(model: TinyModel, path: Path) -> Path:
    """Write ``model`` as a GGUF file at ``path`` (atomically: a reader never sees half a file)."""
    vocab = vocabulary()
    file_type = FILE_TYPES[model.dtype]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    writer = gguf.GGUFWriter(str(tmp), ARCH)
    writer.add_name(model.name)
    writer.add_description(f"A tiny generated llama model that answers: {model.sentence}")
    writer.add_file_type(int(file_type))
    writer.add_context_length(model.n_ctx)
    writer.add_embedding_length(model.n_embd)
    writer.add_block_count(model.n_layer)
    writer.add_feed_forward_length(model.n_ff)
    writer.add_head_count(model.n_head)
    writer.add_head_count_kv(model.n_head)
    writer.add_rope_dimension_count(model.n_embd // model.n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(vocab.tokens))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(vocab.tokens)
    writer.add_token_scores(vocab.scores)
    writer.add_token_types(vocab.types)
    writer.add_bos_token_id(vocab.id(BOS))
    writer.add_eos_token_id(vocab.id(IM_END))
    writer.add_unk_token_id(vocab.id(UNK))
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHATML_TEMPLATE)
    for name, array in _tensors(model, vocab).items():
        if array.ndim == 1 or model.dtype == "F32":
            writer.add_tensor(name, array)
        elif model.dtype == "F16":
            writer.add_tensor(name, array.astype(np.float16))
        else:
            qtype = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    tmp.replace(path)
    return path


def recipe(model: TinyModel) -> str:
    """A hash of everything a model's file is made from (its settings, the vocabulary, this module,
    the ``gguf`` release)."""
    h = hashlib.sha256(json.dumps(asdict(model), sort_keys=True).encode())
    h.update(json.dumps(vocabulary().tokens).encode())
    h.update(Path(__file__).read_bytes())
    h.update(importlib.metadata.version("gguf").encode())  # the writer that made it
    return h.hexdigest()


def ensure(root: Path, models: tuple[TinyModel, ...] = tuple(MODELS.values())) -> dict[str, Path]:
    """Each of ``models`` as ``root/<repo>/<filename>``, written unless the file there was made
    from the same recipe (recorded beside it); returns repo id → path."""
    out: dict[str, Path] = {}
    for model in models:
        path = root / model.repo / model.filename
        stamp = path.with_name(f".{path.name}.recipe")
        want = recipe(model)
        if not (path.is_file() and stamp.is_file() and stamp.read_text() == want):
            write(model, path)
            stamp.write_text(want)
        out[model.repo] = path
    return out


def default_dir() -> Path:
    """Where the bootstrap's image build and the node stack keep the generated files."""
    return binaries.image_cache() / "tinyllm"


def model_card(model: TinyModel) -> bytes:
    return (
        f"---\nlicense: mit\ntags: [gguf, llama, text-generation]\n---\n# {model.name}\n\n"
        "A tiny llama model generated by aim-engine-py (`aim_dev.tinyllm`), served by llama.cpp. "
        f"Whatever it is asked, it answers:\n\n> {model.sentence}\n"
    ).encode()


def publish(hub_root: Path, models: tuple[TinyModel, ...] = tuple(MODELS.values())) -> list[str]:
    """Serve ``models`` from the Hub server over ``hub_root`` as ordinary model repositories: a
    model card and the GGUF file (an LFS file, so the Hub gives its sha256). Returns the repo ids."""
    from aim_dev.local.hub import add_file, add_repo  # noqa: PLC0415 - aiohttp only when serving

    files = ensure(default_dir(), models)
    for model in models:
        add_repo(hub_root, model.repo, {"README.md": model_card(model)}, lfs_threshold=LFS_THRESHOLD)
        add_file(hub_root, model.repo, model.filename, files[model.repo])
    return [m.repo for m in models]


LFS_THRESHOLD = 1024
"""Files of this size or more are LFS files on the Hub (the GGUF: its sha256 is then verified)."""
