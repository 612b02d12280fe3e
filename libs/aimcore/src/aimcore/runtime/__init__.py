"""The reconcile machinery every service runs on: the process shell and settings, the NATS and
Kubernetes clients, durable consumption and ack mapping, the informer cache, leases, the reconciler,
status reporting and the status rules."""
