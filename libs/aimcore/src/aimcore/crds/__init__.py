"""Pydantic models of every served kind, and the CRD YAML generated from them."""
