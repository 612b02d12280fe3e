"""The runtime library of the AIM operator, in three layers (docs/architecture.md):

- :mod:`aimcore.api` — the contract: kinds, CRD models, bus messages and subjects, errors;
- :mod:`aimcore.runtime` — the reconcile machinery: consumer, informer, leases, reconciler, status
  rules, the Kubernetes and NATS clients, settings;
- :mod:`aimcore.domain` — logic several services share: runtime configs, GPUs, naming, Jobs, OCI.

A layer imports only the ones below it; tooling (``aim_dev``) and the CLI (``aimctl``) are separate
packages that no service image contains.
"""
