"""The deployer's own settings (beyond every service's, :data:`aimcore.runtime.settings.COMMON`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator

from aimcore.runtime.settings import AimSettings
from aimcore.runtime.settings.base import setting, stripped_or


class DeployerSettings(AimSettings):
    """How the deployer asks KServe to run InferenceServices."""

    title = "Deployer"

    deployment_mode: Annotated[
        Literal["RawDeployment", "Standard"], BeforeValidator(stripped_or("RawDeployment"))
    ] = setting(
        "RawDeployment",
        env="AIM_KSERVE_DEPLOYMENT_MODE",
        description="The `serving.kserve.io/deploymentMode` annotation of InferenceServices: "
        "`RawDeployment` (KServe before 0.15) or `Standard` (the same mode's name since KServe 0.15).",
    )


SETTINGS = (DeployerSettings,)
"""Every concern the deployer reads beyond the common ones."""
