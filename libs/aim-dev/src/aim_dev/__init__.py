"""Development and test tooling of the AIM operator: everything that runs the operator on this
machine or measures it, and nothing a service needs in production (no service image contains it)."""
