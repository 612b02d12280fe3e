"""The ``aim-test-model`` image's program: a stand-in for an AIM model container that really runs.

:mod:`aim_dev.testmodel.server` is copied alone into the image (standard library only), so the node
tier can run discovery Jobs (``dry-run --format=json``) and predictor pods (health and
``/v1/models``) without GPUs or model weights. :data:`LABELS` are the image's OCI labels, the ones an
AIM model image carries.
"""

from __future__ import annotations

import json
from pathlib import Path

from aim_dev.testmodel.server import CANONICAL_NAME, PORT, VERSION

SERVER = Path(__file__).with_name("server.py")
"""The file that becomes ``/opt/aim-test-model/server.py`` in the image."""

IMAGE = f"localhost/aim/aim-test-model:{VERSION}"

RECOMMENDED_DEPLOYMENTS = [
    {"gpuCount": 0, "precision": "fp16", "metric": "latency", "description": "CPU only (test model)"},
]

LABELS = {
    "com.amd.aim.model.canonicalName": CANONICAL_NAME,
    "com.amd.aim.model.source": f"https://huggingface.co/{CANONICAL_NAME}",
    "com.amd.aim.model.tags": "text-generation,test",
    "com.amd.aim.model.versions": VERSION,
    "com.amd.aim.model.recommendedDeployments": json.dumps(RECOMMENDED_DEPLOYMENTS, separators=(",", ":")),
    "com.amd.aim.hfToken.required": "false",
    "com.amd.aim.title": "AIM test model",
    "com.amd.aim.description.full": "A tiny stand-in for an AIM model container (no weights, no GPU).",
    "org.opencontainers.image.title": "aim-test-model",
    "org.opencontainers.image.description": (
        "Serves /health and /v1/models; dry-run --format=json prints discovery output"
    ),
    "org.opencontainers.image.version": VERSION,
    "org.opencontainers.image.vendor": "aim-engine-py",
    "org.opencontainers.image.licenses": "MIT",
}

WEIGHTS = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}',
    "model.safetensors": bytes(range(256)) * 2048,  # 512 KiB, an LFS file on the Hub
    "tokenizer.json": b'{"version": "1.0"}',
}
"""The files of the test model's source, ``hf://aim-test/tiny-model``, as a Hub serves them (the node
stack's does): what a download Job caches for it. The server never reads them."""

__all__ = ["CANONICAL_NAME", "IMAGE", "LABELS", "PORT", "SERVER", "VERSION", "WEIGHTS"]
