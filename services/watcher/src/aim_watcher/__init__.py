"""The AIM operator's watcher service."""
