"""The GGUF header parser behind LLMKube's ``Model.status.gguf``: files written by llama.cpp's own
``gguf`` package are parsed and every status field checked (and cross-checked against gguf-py's
reader), the parser is shown to stay inside the header, and corrupt or hostile headers (wrong magic,
old or big-endian versions, truncation, absurd sizes) fail with ``GGUFError``."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from aim_cache_jobs.gguf import (
    FILE_TYPE_NAMES,
    KEEP_ARRAY_ELEMENTS,
    GGUFArray,
    GGUFError,
    GGUFHeader,
    parse_header,
    quantization_name,
    read_local,
    status_fields,
)
from aimcore.api.crds.llmkube import GGUFMetadata

TOKENS = 3000

EXPECTED_STATUS = {
    "architecture": "llama",
    "modelName": "Tiny Llama Test",
    "quantization": "Q4_K_M",
    "contextLength": 8192,
    "embeddingSize": 512,
    "layerCount": 6,
    "headCount": 8,
    "license": "apache-2.0",
    "tensorCount": 3,
    "fileVersion": 3,
}


def write_gguf(path: Path, *, big_tensor_bytes: int = 0, extra_tensors: int = 0) -> Path:
    """A small but real llama-style GGUF (tokenizer arrays of ``TOKENS`` entries, three tensors, plus
    ``extra_tensors`` tiny ones); ``big_tensor_bytes`` sizes the first tensor's data."""
    w = gguf.GGUFWriter(path, "llama")  # writes general.architecture itself
    w.add_name("Tiny Llama Test")
    w.add_context_length(8192)
    w.add_embedding_length(512)
    w.add_block_count(6)
    w.add_head_count(8)
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q4_K_M))
    w.add_license("apache-2.0")
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok_{i:05d}" for i in range(TOKENS)])
    w.add_token_scores([float(-i) for i in range(TOKENS)])
    w.add_token_types([1] * TOKENS)
    w.add_array("test.nested", [[1, 2], [3, 4, 5]])
    w.add_float32("test.rope_scale", 0.5)
    w.add_bool("test.flag", True)
    w.add_int64("test.negative", -7)
    big = max(big_tensor_bytes // 4, 16)
    w.add_tensor("token_embd.weight", np.zeros(big, dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight", np.arange(64, dtype=np.float32).reshape(8, 8))
    w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float16))
    for i in range(extra_tensors):
        w.add_tensor(f"extra.{i:04d}.weight", np.ones(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


# -- hand-built headers for the corrupt cases ------------------------------------------------------


def _str(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _str(key) + struct.pack("<I", vtype) + payload


def _header(
    kvs: Sequence[bytes], *, version: int = 3, tensors: int = 0, kv_count: int | None = None
) -> bytes:
    count = len(kvs) if kv_count is None else kv_count
    return b"GGUF" + struct.pack("<IQQ", version, tensors, count) + b"".join(kvs)


def _bytes_reader(data: bytes) -> Callable[[int, int], bytes]:
    return lambda offset, size: data[offset : offset + size]


ARCH_KV = _kv("general.architecture", 8, _str("llama"))


# -- the happy path --------------------------------------------------------------------------------


def test_status_fields_from_a_generated_file(model_file: Path) -> None:
    header = read_local(model_file)
    assert header.version == 3
    assert header.tensor_count == 3
    assert status_fields(header) == EXPECTED_STATUS
    # The wire form is exactly what the CRD model accepts and renders back.
    meta = GGUFMetadata.model_validate(status_fields(header))
    assert meta.context_length == 8192
    assert meta.quantization == "Q4_K_M"
    assert meta.model_dump(by_alias=True, exclude_none=True) == EXPECTED_STATUS


def test_metadata_matches_gguf_py_reader(model_file: Path) -> None:
    header = read_local(model_file)
    reader = gguf.GGUFReader(model_file)
    keys = [k for k in reader.fields if not k.startswith("GGUF.")]
    assert list(header.metadata) == keys
    for key in keys:
        fld = reader.fields[key]
        if fld.types[0] == gguf.GGUFValueType.ARRAY:
            if fld.types[1] == gguf.GGUFValueType.ARRAY:
                continue  # nested: checked below
            ours = header.metadata[key]
            assert isinstance(ours, GGUFArray)
            assert ours.length == len(fld.data)
            assert ours.element_type == int(fld.types[-1])
            theirs = [fld.contents(i) for i in range(min(len(fld.data), KEEP_ARRAY_ELEMENTS))]
            assert ours == pytest.approx(theirs) if isinstance(theirs[0], float) else ours == theirs
        else:
            assert header.metadata[key] == pytest.approx(fld.contents()), key
    assert header.metadata["test.nested"] == [[1, 2], [3, 4, 5]]
    assert header.metadata["test.flag"] is True
    assert header.metadata["test.negative"] == -7


def test_large_arrays_keep_only_their_head(model_file: Path) -> None:
    tokens = read_local(model_file).metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, GGUFArray)
    assert tokens.length == TOKENS
    assert len(tokens) == KEEP_ARRAY_ELEMENTS
    assert tokens[:3] == ["tok_00000", "tok_00001", "tok_00002"]
    assert tokens[-1] == f"tok_{KEEP_ARRAY_ELEMENTS - 1:05d}"


def test_reads_stay_below_the_tensor_data(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "big.gguf", big_tensor_bytes=1 << 20, extra_tensors=200)
    data_offset = gguf.GGUFReader(path).data_offset
    raw = path.read_bytes()
    calls: list[tuple[int, int]] = []

    def read_at(offset: int, size: int) -> bytes:
        chunk = raw[offset : offset + size]
        calls.append((offset, len(chunk)))
        return chunk

    block = 4096
    header = parse_header(read_at, block=block)
    assert status_fields(header)["tensorCount"] == 203
    highest = max(offset + n for offset, n in calls)
    assert highest < data_offset, (highest, data_offset)
    # Buffered: one read per block, not one per value (the tokenizer alone has 9000 values).
    assert len(calls) <= highest // block + 2
    # Sequential, never backwards.
    assert [o for o, _ in calls] == sorted(o for o, _ in calls)


def test_a_big_vocabulary_is_a_handful_of_block_reads() -> None:
    n = 300_000
    tokens = b"".join(_str(f"▁token{i}") for i in range(n))
    scores = struct.pack(f"<{n}f", *([0.0] * n))
    raw = _header(
        [
            ARCH_KV,
            _kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, n) + tokens),
            _kv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, n) + scores),
            _kv("general.name", 8, _str("after the vocab")),
        ]
    )
    calls = 0

    def read_at(offset: int, size: int) -> bytes:
        nonlocal calls
        calls += 1
        return raw[offset : offset + size]

    header = parse_header(read_at)
    assert header.metadata["tokenizer.ggml.tokens"].length == n
    assert header.metadata["tokenizer.ggml.tokens"][1] == "▁token1"
    assert header.metadata["general.name"] == "after the vocab"
    assert calls <= len(raw) // (1 << 20) + 3


def test_version_2_and_zero_tensors() -> None:
    raw = _header(
        [ARCH_KV, _kv("general.name", 8, _str("v2")), _kv("llama.block_count", 4, b"\x20\0\0\0")], version=2
    )
    header = parse_header(_bytes_reader(raw))
    assert header == GGUFHeader(
        version=2,
        tensor_count=0,
        metadata={"general.architecture": "llama", "general.name": "v2", "llama.block_count": 32},
    )
    assert status_fields(header) == {
        "architecture": "llama",
        "modelName": "v2",
        "layerCount": 32,
        "tensorCount": 0,
        "fileVersion": 2,
    }


def test_absent_and_mistyped_fields_are_omitted() -> None:
    raw = _header(
        [
            _kv("general.name", 8, _str("  ")),  # blank
            _kv("general.file_type", 4, struct.pack("<I", 99)),
            _kv("llama.context_length", 4, struct.pack("<I", 4096)),  # no architecture: not looked up
        ],
        tensors=5,
    )
    assert status_fields(parse_header(_bytes_reader(raw))) == {
        "quantization": "FTYPE_99",
        "tensorCount": 5,
        "fileVersion": 3,
    }
    raw = _header([ARCH_KV, _kv("llama.context_length", 8, _str("4096")), _kv("llama.block_count", 7, b"\1")])
    assert status_fields(parse_header(_bytes_reader(raw))) == {
        "architecture": "llama",
        "tensorCount": 0,
        "fileVersion": 3,
    }


def test_file_type_names_follow_llama_cpp() -> None:
    for member in gguf.LlamaFileType:
        if member is gguf.LlamaFileType.GUESSED:
            continue
        assert FILE_TYPE_NAMES[member.value] == member.name.removeprefix("MOSTLY_").removeprefix("ALL_")
        assert quantization_name(member.value) == FILE_TYPE_NAMES[member.value]
    assert quantization_name(1024) == "FTYPE_1024"


# -- corrupt and hostile headers -------------------------------------------------------------------


def test_truncated_files(model_file: Path, tmp_path: Path) -> None:
    raw = model_file.read_bytes()
    data_offset = gguf.GGUFReader(model_file).data_offset
    for cut in (0, 3, 6, 20, 30, 60, data_offset // 2):
        path = tmp_path / f"cut{cut}.gguf"
        path.write_bytes(raw[:cut])
        with pytest.raises(GGUFError, match=r"truncated|not a GGUF"):
            read_local(path)


def test_truncated_inside_a_trailing_skipped_array() -> None:
    n = 10_000
    raw = _header([ARCH_KV, _kv("tail", 9, struct.pack("<IQ", 4, n) + b"\0" * (4 * n))])
    assert parse_header(_bytes_reader(raw)).metadata["tail"].length == n
    with pytest.raises(GGUFError, match="truncated"):
        parse_header(_bytes_reader(raw[:-100]))
    with pytest.raises(GGUFError, match="truncated"):
        parse_header(_bytes_reader(raw[:-100]), block=64)


def test_wrong_magic(tmp_path: Path) -> None:
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGML" + b"\0" * 100)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_local(path)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        parse_header(_bytes_reader(b""))


def test_unsupported_versions() -> None:
    with pytest.raises(GGUFError, match="unsupported GGUF version 1"):
        parse_header(_bytes_reader(_header([ARCH_KV], version=1)))
    with pytest.raises(GGUFError, match="unsupported GGUF version 4"):
        parse_header(_bytes_reader(_header([ARCH_KV], version=4)))


def test_big_endian_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "be.gguf"
    w = gguf.GGUFWriter(path, "llama", endianess=gguf.GGUFEndian.BIG)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(GGUFError, match="big-endian"):
        read_local(path)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (_header([_kv("general.name", 8, struct.pack("<Q", 1 << 40))]), "exceeds the 16777216-byte limit"),
        (_header([struct.pack("<Q", 1 << 30) + b"key"]), "exceeds the 16777216-byte limit"),
        (_header([_kv("a", 9, struct.pack("<IQ", 0, 10**9))]), "array of 1000000000 elements"),
        (
            _header([_kv("a", 9, struct.pack("<IQ", 8, 100) + _str("x") * 64 + struct.pack("<Q", 1 << 33))]),
            "byte limit",
        ),
        (_header([ARCH_KV], kv_count=10**7), "metadata count 10000000 exceeds"),
        (_header([ARCH_KV], tensors=10**8), "tensor count 100000000 exceeds"),
        (_header([_kv("a", 13, b"")]), "unknown GGUF value type 13"),
        (_header([_kv("a", 9, struct.pack("<IQ", 42, 1))]), "unknown GGUF value type 42"),
        (_header([ARCH_KV, ARCH_KV]), "duplicate GGUF metadata key"),
        (_header([_kv("a", 9, struct.pack("<IQ", 10, 10**8 - 1))]), "header larger than"),
    ],
    ids=[
        "string-length",
        "key-length",
        "array-count",
        "skipped-string-length",
        "kv-count",
        "tensor-count",
        "value-type",
        "element-type",
        "duplicate-key",
        "header-size",
    ],
)
def test_absurd_sizes_and_bad_types(raw: bytes, match: str) -> None:
    # A reader that would hand out endless zeros: the guards, not EOF, must stop the parse.
    def endless(offset: int, size: int) -> bytes:
        head = raw[offset : offset + size]
        return head + b"\0" * (size - len(head))

    reads: list[Any] = []

    def counting(offset: int, size: int) -> bytes:
        reads.append(offset)
        return endless(offset, size)

    with pytest.raises(GGUFError, match=match):
        parse_header(counting, block=4096)
    assert len(reads) < 10


def test_missing_local_file(tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="cannot read"):
        read_local(tmp_path / "nope.gguf")
