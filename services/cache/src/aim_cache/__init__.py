"""The AIM operator's cache service."""
