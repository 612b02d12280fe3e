"""The discovery service: catalog, dry-run Jobs, templates, default templates."""
