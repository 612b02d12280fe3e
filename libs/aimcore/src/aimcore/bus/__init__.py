"""The NATS contract between the services (DESIGN §2-3): subjects, messages, topology, acks, tracing."""
