"""The deployer's own settings (beyond every service's, :data:`aimcore.runtime.settings.COMMON`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator

from aimcore.runtime.settings import AimSettings
from aimcore.runtime.settings.base import setting, split_commas, stripped_or

DEFAULT_OTEL_SCALER = "keda-otel-scaler.keda.svc:4318"


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

    keda_otel_scaler_address: Annotated[str, BeforeValidator(stripped_or(DEFAULT_OTEL_SCALER))] = setting(
        DEFAULT_OTEL_SCALER,
        env="AIM_KEDA_OTEL_SCALER_ADDRESS",
        form="host:port",
        description="The KEDA OpenTelemetry scaler the ScaledObjects of services that scale to zero "
        "(`minReplicas: 0`) ask, for the gateway's request counter that wakes them and for metrics "
        "that name no `serverAddress`.",
    )
    cooldown_seconds_per_gi_memory: int = setting(
        5,
        env="AIM_COOLDOWN_SECONDS_PER_GI_MEMORY",
        description="For a service that scales to zero and sets no `autoScaling.cooldownPeriod`: "
        "seconds of cooldown per GiB of the predictor's memory, over 300 s (at most 1200 s in all).",
    )


SETTINGS = (DeployerSettings,)
"""Every concern the deployer reads beyond the common ones."""
