"""The AIM operator's registry-sync service."""
