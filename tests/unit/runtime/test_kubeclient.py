"""The API client loads kubernetes-asyncio's configuration and REST layer only (issue 20: the
generated client is ~850 modules and ~100 MB per process), and stays compatible with a process
that loads the generated client too."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import aimcore.runtime.kube as kube
light = sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio"))
import kubernetes_asyncio.client as generated
print(json.dumps({
    "light": light,
    "same_exception": generated.ApiException is kube.ApiException,
    "same_configuration": generated.Configuration is kube.Configuration,
    "generated_loaded": "kubernetes_asyncio.client.models" in sys.modules,
}))
"""


def test_the_kube_client_does_not_import_the_generated_client() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True)
    found = json.loads(out.stdout)
    generated = [
        m
        for m in found["light"]
        if m.startswith(("kubernetes_asyncio.client.models", "kubernetes_asyncio.client.api"))
    ]
    assert generated == [], generated
    assert "kubernetes_asyncio.config.kube_config" in found["light"]
    # a tool importing the generated client afterwards gets the very classes the operator raises
    assert found["generated_loaded"] and found["same_exception"] and found["same_configuration"]
