"""An LLMKube ``Model`` (``inference.llmkube.dev``) read through its parsed model: where its bytes
come from (source, file set, expected digest) and what hardware it asks for.

Why here: the cache service's reconciler, its hardware rules and its Node mapper each ask the same
questions of a Model (does it want a GPU, how many, which DRA claims); one adapter answers them
over the typed spec, with the CRD's defaults (``accelerator: cpu``, ``vendor: nvidia``) applied
once. The enums the model checks (accelerator, vendor, runtime) are exact: a spec the model refuses
never reaches a reader (the runtime reports ``InvalidSpec``).
"""

from __future__ import annotations

from aimcore.api.crds.llmkube import (
    GPUSpec,
    Model,
    ModelFormat,
    ModelSpec,
    PodResourceClaim,
)
from aimcore.api.kinds import LLMKUBE_MODEL, KindRef, in_group
from aimcore.domain.families.base import Object

__all__ = ["NO_GPU_ACCELERATORS", "LLMKubeModel"]

NO_GPU_ACCELERATORS = ("cpu", "metal")
"""Accelerators that need no GPU in the cluster (Metal runs in the metal agent on a Mac host)."""


class LLMKubeModel(Object[Model]):
    """One LLMKube ``Model``."""

    kinds = (LLMKUBE_MODEL,)

    @classmethod
    def kind(cls, group: str) -> KindRef:
        """The Model kind of ``group`` (LLMKube's group serves the one)."""
        return in_group(cls.kinds, group)

    @property
    def spec(self) -> ModelSpec:
        return self.resource.spec

    # -- where the bytes come from ---------------------------------------------------------------

    @property
    def source(self) -> str:
        """``spec.source`` as written."""
        return self.spec.source

    @property
    def files(self) -> list[str] | None:
        """``spec.files`` as written (``None``: not set)."""
        return self.spec.files

    @property
    def mmproj(self) -> str | None:
        return self.spec.mmproj

    @property
    def expected_sha256(self) -> str | None:
        """``spec.sha256`` lower-cased (what a copy's digest is compared with), ``None`` if unset."""
        return self.spec.sha256.lower() if self.spec.sha256 else None

    @property
    def fetch_inputs(self) -> dict[str, object]:
        """What a fetch depends on, as written: the source, the file set and the expected digest."""
        spec = self.spec
        return {"source": spec.source, "files": spec.files, "mmproj": spec.mmproj, "sha256": spec.sha256}

    @property
    def reads_gguf_header(self) -> bool:
        """Whether the primary file is a GGUF whose header is read into ``status.gguf``."""
        return self.spec.format == ModelFormat.GGUF

    @property
    def refresh_policy(self) -> str:
        """``IfNotPresent`` (the default) or ``OnChange``."""
        return str(self.spec.refresh_policy)

    @property
    def last_revalidated(self) -> str | None:
        """``status.lastRevalidated`` as the status service wrote it (RFC 3339), if it did."""
        value = self.status.get("lastRevalidated")
        return value if isinstance(value, str) and value else None

    # -- hardware --------------------------------------------------------------------------------

    @property
    def accelerator(self) -> str:
        """``spec.hardware.accelerator``; ``cpu`` when there is no ``hardware``."""
        hardware = self.spec.hardware
        return str(hardware.accelerator) if hardware is not None else "cpu"

    @property
    def gpu(self) -> GPUSpec | None:
        """``spec.hardware.gpu``, if written."""
        hardware = self.spec.hardware
        return hardware.gpu if hardware is not None else None

    @property
    def gpu_wanted(self) -> bool:
        """Whether the model needs a GPU in the cluster: any accelerator but ``cpu`` and ``metal``
        (``gpu.enabled``/``gpu.count`` next to ``cpu`` do not turn one on, as in the original)."""
        return self.accelerator not in NO_GPU_ACCELERATORS

    @property
    def gpus_wanted(self) -> int:
        """How many GPUs one replica needs: 0 without a GPU, else ``gpu.count`` with 0/unset meaning
        1 (the original falls back to the InferenceService's, which a Model cannot see)."""
        if not self.gpu_wanted:
            return 0
        count = self.gpu.count if self.gpu is not None else None
        return count if count is not None and count > 1 else 1

    @property
    def resource_claims(self) -> list[PodResourceClaim]:
        """The DRA claims of ``spec.hardware.gpu.resourceClaims`` (``[]``: none)."""
        gpu = self.gpu
        return list(gpu.resource_claims or []) if gpu is not None else []
