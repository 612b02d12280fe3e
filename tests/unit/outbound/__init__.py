"""The outbound address policy: where it comes from, what it judges, the forward proxy."""
