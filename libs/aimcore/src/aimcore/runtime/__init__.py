"""The reconcile runtime every service runs on: durable consumption, ack mapping, status reporting."""
