"""Shared library of the AIM operator: CRD models, the NATS contract, Kubernetes helpers and the
local control plane."""
