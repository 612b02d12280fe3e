"""Run the system's servers as local processes: the embedded default and the test fixtures share this."""
