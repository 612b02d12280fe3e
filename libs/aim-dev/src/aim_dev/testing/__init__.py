"""Test support: the pytest plugin that runs real servers as processes."""
