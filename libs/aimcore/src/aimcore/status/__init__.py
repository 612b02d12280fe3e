"""How status reports become CR status: condition merge, observedGeneration, no-op detection."""
