"""How reports become ``.status``: composition and the per-kind rules (used by the status service
and by every reporter, which checks a report against the status before sending it)."""
