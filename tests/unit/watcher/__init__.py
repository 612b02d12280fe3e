"""The watcher: mirrored kinds, per-object ordering, election, resume points."""
