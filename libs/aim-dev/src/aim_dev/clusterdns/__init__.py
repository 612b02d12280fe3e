"""A cluster DNS stand-in for the multi-node test tier (CoreDNS has no package here): the records
CoreDNS's ``kubernetes`` plugin answers for Services and Endpoints (:mod:`.records`), served over UDP
and TCP from a list and watch of the cluster (:mod:`.server`). Development tooling, never in the
product."""
