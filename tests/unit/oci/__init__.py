"""The OCI registry client: credentials, labels, protocol paths, the outbound policy."""
