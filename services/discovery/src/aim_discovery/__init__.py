"""The AIM operator's discovery service."""
