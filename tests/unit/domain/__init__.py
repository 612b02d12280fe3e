"""The AIM domain logic (aimcore.domain): GPUs, Jobs, runtime configs, path templates, display units."""
