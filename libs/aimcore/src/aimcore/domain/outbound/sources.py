"""The outbound address policy applied to the model sources a spec names, before anything connects.
Why: the operator's own downloads judge every address they connect to (:mod:`.connect`), but a
custom model's sources are also fetched where the operator does not connect: the inference container
downloads them itself when the service is not cached. A source on the cloud metadata service
(``s3://169.254.169.254/…``, ``AWS_ENDPOINT_URL=http://169.254.169.254``) therefore deployed without
a word (issue 24). What can be judged from the spec alone is judged here, with the reason users see
for every other refused address (``AddressNotAllowed``): an S3 bucket written as an address (any
spelling :func:`~.policy.parse_address` reads), an ``oci://`` registry written as one, and the
endpoints the spec's literal environment sets (``AWS_ENDPOINT_URL_S3``/ ``AWS_ENDPOINT_URL`` for
``s3://``, ``HF_ENDPOINT`` for ``hf://``, as the downloader reads them). Host names are not resolved
here (the pod that connects may see other addresses): they are judged when the operator connects, as
before. Messages name the source, the variable and the host, never an endpoint URL (which may carry
credentials).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aimcore.domain.outbound.policy import (
    OutboundPolicy,
    OutboundRefused,
    check_host,
    check_url,
    parse_address,
)

__all__ = ["HF_ENDPOINT_VARIABLE", "S3_ENDPOINT_VARIABLES", "literal_env", "source_refusal"]

S3_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
HF_ENDPOINT_VARIABLE = "HF_ENDPOINT"


def literal_env(*envs: Any) -> dict[str, str]:
    """The variables with a literal ``value`` in ``envs`` (Kubernetes ``EnvVar`` lists, later ones
    winning); ``valueFrom`` references are not read (their values are not the spec's to judge)."""
    out: dict[str, str] = {}
    for env in envs:
        for var in env if isinstance(env, Iterable) and not isinstance(env, str | bytes | Mapping) else ():
            if isinstance(var, Mapping) and var.get("name") and isinstance(var.get("value"), str):
                out[str(var["name"])] = var["value"]
    return out


def _check(uri: str, env: Mapping[str, str], policy: OutboundPolicy) -> str | None:
    """Why ``uri`` (with ``env``) is refused, or None; raises nothing."""
    try:
        if uri.startswith("s3://"):
            variable = next((v for v in S3_ENDPOINT_VARIABLES if env.get(v, "").strip()), None)
            if variable is not None:
                try:
                    check_url(env[variable].strip(), policy)
                except OutboundRefused as exc:
                    return f"{variable}: {exc.message}"
            bucket = uri.removeprefix("s3://").partition("/")[0]
            if parse_address(bucket) is not None:
                check_host(bucket, policy)
        elif uri.startswith("oci://"):
            registry = uri.removeprefix("oci://").partition("/")[0]
            host = registry.rpartition(":")[0] if registry.count(":") == 1 else registry
            if parse_address(host.strip("[]")) is not None:
                check_host(host.strip("[]"), policy)
                return None
        elif uri.startswith("hf://") and env.get(HF_ENDPOINT_VARIABLE, "").strip():
            try:
                check_url(env[HF_ENDPOINT_VARIABLE].strip(), policy)
            except OutboundRefused as exc:
                return f"{HF_ENDPOINT_VARIABLE}: {exc.message}"
    except OutboundRefused as exc:
        return f"the {'registry' if uri.startswith('oci://') else 'bucket'}: {exc.message}"
    return None


def source_refusal(
    sources: Sequence[Any], env: Mapping[str, str], policy: OutboundPolicy, where: str = "spec.modelSources"
) -> str | None:
    """The first of ``sources`` (``modelSources`` entries as stored) the policy refuses, as a message
    for an ``AddressNotAllowed`` condition; ``env`` is the literal environment of the object naming
    them (each source's own ``env`` wins over it). None when nothing is refused."""
    for index, source in enumerate(sources):
        if not isinstance(source, Mapping):
            continue
        uri = str(source.get("sourceUri") or "")
        why = _check(uri, {**env, **literal_env(source.get("env"))}, policy)
        if why is not None:
            return f"{where}[{index}] ({uri}): {why}"
    return None
