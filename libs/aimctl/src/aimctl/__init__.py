"""The aimctl command line: the embedded stack, the audit trail, caches, bus credentials, CRD
generation, benchmarks."""
