"""Shared domain logic: what more than one service needs to know about AIM (runtime configs, GPUs,
naming, Jobs, children, OCI registries, outbound addresses)."""
