"""The ``aim-llamacpp`` image: a real CPU model server that honours the AIM container contract
(docs/node.md), and the model images made from it.

Why llama.cpp through the ``xllamacpp`` wheel (pinned: :data:`XLLAMACPP`): it is a CPU build of
llama.cpp with its own HTTP server inside (continuous batching, the OpenAI API, ``/health`` that is
200 only once the weights are loaded, ``/metrics``), on PyPI, so it installs in seconds into the
Debian + Python base every node image already shares, and the very same build runs on the host for
the inference benchmark's by-hand comparison. Debian's ``llama.cpp-tools`` exists only in sid (it
needs a newer glibc than bookworm: a second base image, from an archive whose Release file has
expired), and ``llama-cpp-python`` ships no binary wheel (an 11-minute compile here). The image is
built on the ``aim-cache`` service image, so a model container with no cache mounted downloads its
weights with the operator's own downloader (same outbound policy, same verification); it adds
``libgomp1`` (llama.cpp's OpenMP runtime), the wheel and :mod:`aim_dev.llamacpp.runtime`.

Model images (:func:`model_config`) are this image with a model's identity as configuration only
(no new layer, :meth:`aim_dev.images.Builder.derive`): ``AIM_MODEL_ID`` and the AIM labels, with one
recommended CPU deployment whose precision is the GGUF file's. The weights never are in an image:
they come from the model source (the local Hub server here), through the model cache the operator
mounts, or downloaded at start.
"""

from __future__ import annotations

import json
from pathlib import Path

from aim_dev import gemma, tinyllm

Model = tinyllm.TinyModel | gemma.GemmaModel
"""A model the runtime serves from the Hub: a generated tiny model, or Gemma 3 270M."""

XLLAMACPP = "2026.10.11549"
"""The pinned ``xllamacpp`` release, the same in the image and in the workspace's lock file."""
VERSION = "0.1.0"
IMAGE = f"localhost/aim/aim-llamacpp:{VERSION}"
RUNTIME = Path(__file__).with_name("runtime.py")
"""The file that becomes ``/opt/aim-llamacpp/runtime.py`` in the image."""
IMAGE_RUNTIME = "/opt/aim-llamacpp/runtime.py"
PORT = 8000

LABELS = {
    "org.opencontainers.image.title": "aim-llamacpp",
    "org.opencontainers.image.description": (
        "An AIM-compatible CPU model server on llama.cpp: dry-run --format=json for discovery, "
        "serves the GGUF model of AIM_MODEL_ID from the model cache on port 8000"
    ),
    "org.opencontainers.image.version": VERSION,
    "org.opencontainers.image.vendor": "aim-engine-py",
    "com.amd.aim.runtime.engine": f"llama.cpp (xllamacpp {XLLAMACPP})",
}


def precision(model: tinyllm.TinyModel) -> str:
    """The AIM precision of a generated model's file (what its dry-run reports)."""
    return {"F16": "fp16", "Q8_0": "int8"}[model.dtype]


def model_precision(model: Model) -> str | None:
    """The AIM precision of a model's file; ``None`` where a profile cannot name it (Q4_K_M)."""
    return precision(model) if isinstance(model, tinyllm.TinyModel) else model.precision


def describe(model: Model) -> str:
    if isinstance(model, tinyllm.TinyModel):
        return f"A tiny generated llama model; it answers: {model.sentence}"
    return model.description


def model_ref(model: Model, registry: str = "localhost/aim") -> str:
    return f"{registry}/aim-{model.name}:{VERSION}"


def model_config(model: Model) -> tuple[dict[str, str], dict[str, str]]:
    """The environment and labels that make the runtime image ``model``'s AIM model image."""
    deployment = {
        "gpuCount": 0,
        "precision": model_precision(model),
        "metric": "latency",
        "description": "CPU only (llama.cpp)",
    }
    deployments = [{k: v for k, v in deployment.items() if v is not None}]
    labels = {
        **LABELS,
        "org.opencontainers.image.title": f"aim-{model.name}",
        "com.amd.aim.model.canonicalName": model.repo,
        "com.amd.aim.model.source": f"hf://{model.repo}",
        "com.amd.aim.model.tags": "text-generation,chat,cpu",
        "com.amd.aim.model.versions": VERSION,
        "com.amd.aim.model.recommendedDeployments": json.dumps(deployments, separators=(",", ":")),
        "com.amd.aim.hfToken.required": "false",
        "com.amd.aim.title": f"{model.name} on llama.cpp",
        "com.amd.aim.description.full": describe(model),
    }
    return {"AIM_MODEL_ID": model.repo}, labels


__all__ = ["IMAGE", "IMAGE_RUNTIME", "LABELS", "PORT", "RUNTIME", "VERSION", "XLLAMACPP", "model_config"]
