"""A tiny but valid GGUF file, built by hand, for the embedded demo: the LLMKube Model the demo
applies needs something with a real header to describe, and the ``gguf`` package is only a test
dependency. Layout (GGUF v3, little endian): magic, version, tensor and key/value counts, the
key/value pairs, the tensor infos, padding to the 32-byte alignment, then the tensor data."""

from __future__ import annotations

import struct

_UINT32 = 4
_STRING = 8
_F32 = 0
ALIGNMENT = 32


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _kv_string(key: str, value: str) -> bytes:
    return _string(key) + struct.pack("<I", _STRING) + _string(value)


def _kv_u32(key: str, value: int) -> bytes:
    return _string(key) + struct.pack("<II", _UINT32, value)


def tiny_gguf(name: str = "Tiny Demo", *, architecture: str = "llama", context_length: int = 2048) -> bytes:
    """A llama-style GGUF with one 64-float tensor (Q4_K_M file type, Apache-2.0 license)."""
    kvs = [
        _kv_string("general.architecture", architecture),
        _kv_string("general.name", name),
        _kv_u32("general.file_type", 15),  # MOSTLY_Q4_K_M
        _kv_string("general.license", "apache-2.0"),
        _kv_u32(f"{architecture}.context_length", context_length),
        _kv_u32(f"{architecture}.embedding_length", 64),
        _kv_u32(f"{architecture}.block_count", 2),
        _kv_u32(f"{architecture}.attention.head_count", 4),
    ]
    elements = 64
    tensor_info = _string("token_embd.weight") + struct.pack("<IQIQ", 1, elements, _F32, 0)
    header = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kvs)) + b"".join(kvs) + tensor_info
    padding = b"\0" * (-len(header) % ALIGNMENT)
    data = struct.pack(f"<{elements}f", *(float(i) / elements for i in range(elements)))
    return header + padding + data
