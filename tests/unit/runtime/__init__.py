"""The reconcile runtime (aimcore.runtime): clients, informer, reconciler, health, settings, logs."""
