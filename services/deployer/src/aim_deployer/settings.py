"""The deployer's own settings, from the environment (the operator's Deployment or the embedded
stack sets them):

- ``AIM_KSERVE_DEPLOYMENT_MODE``: how InferenceServices ask KServe to run them, written as the
  ``serving.kserve.io/deploymentMode`` annotation: ``RawDeployment`` (default; KServe before 0.15)
  or ``Standard`` (the same mode's name since KServe 0.15).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MODES = ("RawDeployment", "Standard")


@dataclass(frozen=True)
class DeployerSettings:
    deployment_mode: str = "RawDeployment"

    @classmethod
    def from_env(cls) -> DeployerSettings:
        mode = os.environ.get("AIM_KSERVE_DEPLOYMENT_MODE", "").strip() or "RawDeployment"
        if mode not in MODES:
            raise ValueError(f"AIM_KSERVE_DEPLOYMENT_MODE must be one of {', '.join(MODES)}, not {mode!r}")
        return cls(deployment_mode=mode)
