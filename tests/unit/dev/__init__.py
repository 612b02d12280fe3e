"""The development tooling (aim-dev): benches, the local stack and node, the test model, packaging."""
