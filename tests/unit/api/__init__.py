"""The API contract (aimcore.api): kinds, subjects, the bus contract, errors, retries, image names."""
