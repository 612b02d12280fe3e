"""aimctl: audit queries and output, the node refusal, generated permission docs."""
