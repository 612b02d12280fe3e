"""Kubernetes access for the services: one generic client for every kind, and CRD installation."""
