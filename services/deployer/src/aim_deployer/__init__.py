"""The AIM operator's deployer service."""
