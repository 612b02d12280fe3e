"""The bus contract: messages, subjects, topology, roles and permissions, mirror entries, progress offers."""
