"""The AIM kinds' status: their per-kind rules (:mod:`.rules`: what each kind derives from its
component conditions, and which state every reason conveys) and the composer built on them
(:mod:`.compose`), which the status service writes with and every service's reporter checks its
reports against."""
