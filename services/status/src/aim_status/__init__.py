"""The AIM operator's status service."""
