"""The CRD models of the three API groups (pydantic): the runtime type of every object and the
single source of the CRD YAML."""
