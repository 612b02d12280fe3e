"""Real servers come from the ``aimcore`` pytest plugin (aimcore.testing.plugin); helpers are in
``tests.helpers``."""
