"""The deployer's own settings (beyond every service's, :data:`aimcore.runtime.settings.COMMON`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator

from aimcore.runtime.settings import AimSettings
from aimcore.runtime.settings.base import setting, split_commas, stripped_or


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
    propagate_annotations: Annotated[tuple[str, ...], BeforeValidator(split_commas)] = setting(
        (),
        env="AIM_PROPAGATE_ANNOTATIONS",
        form="comma-separated shell globs of annotation keys",
        description="The AIMService's own annotations whose keys match one of these globs are copied "
        "to its InferenceService (and so to the predictor pods), e.g. `example.com/*,cost-center`. "
        "Never the operator's, KServe's or kubectl's own (`aim.eai.amd.com/*`, `serving.kserve.io/*`, "
        "`kubectl.kubernetes.io/*`, ...). Labels propagate through the runtime config's "
        "`labelPropagation`.",
    )


SETTINGS = (DeployerSettings,)
"""Every concern the deployer reads beyond the common ones."""
