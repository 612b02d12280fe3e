"""The API contract, the ground floor every other layer stands on: the kinds the operator knows,
the CRD models (the spec), the messages and subjects of the bus, the error vocabulary. Nothing here
does I/O, and :mod:`aimcore.api.kinds` loads no CRD model."""
