"""The operator's outbound address policy (SSRF guard), shared by every path that connects to a
host a spec or a server names: the policy and its checks (:mod:`.policy`, pure), and the hooks that
apply it at connect time to blocking clients (:mod:`.connect`) and to aiohttp (:mod:`.resolver`), and
its judgement of the model sources a spec names before anything connects (:mod:`.sources`).
See ``docs/deploy.md`` ("Outbound address policy")."""

from aimcore.domain.outbound.policy import (
    ADDRESS_NOT_ALLOWED,
    POLICY_ENV,
    STRICT,
    OutboundPolicy,
    OutboundRefused,
    UnresolvedHost,
    check_addresses,
    check_host,
    check_url,
    normalize_host,
    parse_address,
    refusal_in,
)
from aimcore.domain.outbound.sources import literal_env, source_refusal
from aimcore.runtime.settings.outbound import ALLOW_PRIVATE_ENV, ALLOWED_HOSTS_ENV

__all__ = [
    "ADDRESS_NOT_ALLOWED",
    "ALLOWED_HOSTS_ENV",
    "ALLOW_PRIVATE_ENV",
    "POLICY_ENV",
    "STRICT",
    "OutboundPolicy",
    "OutboundRefused",
    "UnresolvedHost",
    "check_addresses",
    "check_host",
    "check_url",
    "literal_env",
    "normalize_host",
    "parse_address",
    "refusal_in",
    "source_refusal",
]
