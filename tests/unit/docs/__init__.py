"""The documentation: every reference in code and docs resolves inside the repository."""
