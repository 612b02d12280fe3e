"""Subject and KV-key builders.

NATS subjects use ``.`` between tokens and KV keys allow only ``[-/_=.a-zA-Z0-9]``, while
Kubernetes names may contain dots. Every token that carries a user-controlled string is escaped
reversibly: any byte outside ``[-_a-zA-Z0-9]`` becomes ``=XX`` (upper-case hex). The escape is
valid in both subjects and KV keys, so one encoding serves both.

Layout (``{g}`` group alias, ``{k}`` kind, ``{ns}`` namespace or ``_`` for cluster scope):

- change events:   ``aim.events.{g}.{k}.{ns}.{name}``
- status reports:  ``aim.status.{service}.{g}.{k}.{ns}.{name}`` (the reporting service: the server
  lets each publish only under its own name and for its own kinds; the status service takes the
  source from here, never from the payload)
- decisions:       ``aim.decisions.{service}.{g}.{k}.{ns}.{name}``
- requeues:        ``aim.requeue.{service}.{g}.{k}.{ns}.{name}`` (a service's own time-based work)
- schedules:       ``aim.schedule.{service}.{g}.{k}.{ns}.{name}`` (a requeue JetStream publishes when due)
- object mirror:   KV ``aim-objects`` key ``{g}.{k}.{ns}.{name}``
"""

from __future__ import annotations

import re

from aimcore.api.kinds import KindRef

EVENTS_PREFIX = "aim.events"
STATUS_PREFIX = "aim.status"
DECISIONS_PREFIX = "aim.decisions"
REQUEUE_PREFIX = "aim.requeue"
SCHEDULE_PREFIX = "aim.schedule"
CLUSTER_SCOPE = "_"

_SAFE = re.compile(rb"[-_a-zA-Z0-9]")
_ALL_SAFE = re.compile(r"[-_a-zA-Z0-9]+", re.ASCII)

# Short, readable tokens for the groups we use most; any other group is escaped.
_GROUP_ALIASES = {
    "aim.eai.amd.com": "aim",
    "aim.silogen.ai": "silogen",
    "inference.llmkube.dev": "llmkube",
    "serving.kserve.io": "kserve",
    "gateway.networking.k8s.io": "gateway",
    "keda.sh": "keda",
    "": "core",
}
_ALIAS_GROUPS = {v: k for k, v in _GROUP_ALIASES.items()}


def escape(value: str) -> str:
    """Make ``value`` a single subject token / KV key segment, reversibly."""
    if not value:
        raise ValueError("an empty string cannot be a subject token")
    if _ALL_SAFE.fullmatch(value):  # most names: nothing to escape (one match, not one per byte)
        return value
    out: list[str] = []
    for byte in value.encode():
        ch = bytes([byte])
        out.append(ch.decode() if _SAFE.fullmatch(ch) else f"={byte:02X}")
    return "".join(out)


def unescape(token: str) -> str:
    """Inverse of :func:`escape`."""
    out = bytearray()
    i = 0
    while i < len(token):
        if token[i] == "=":
            out.append(int(token[i + 1 : i + 3], 16))
            i += 3
        else:
            out.extend(token[i].encode())
            i += 1
    return out.decode()


def group_token(group: str) -> str:
    return _GROUP_ALIASES.get(group) or escape(group)


def token_group(token: str) -> str:
    return _ALIAS_GROUPS[token] if token in _ALIAS_GROUPS else unescape(token)


def ns_token(namespace: str | None) -> str:
    return escape(namespace) if namespace else CLUSTER_SCOPE


def object_tokens(ref: KindRef, namespace: str | None, name: str) -> str:
    return f"{group_token(ref.group)}.{ref.kind}.{ns_token(namespace)}.{escape(name)}"


def event_subject(ref: KindRef, namespace: str | None, name: str) -> str:
    return f"{EVENTS_PREFIX}.{object_tokens(ref, namespace, name)}"


def status_subject(service: str, ref: KindRef, namespace: str | None, name: str) -> str:
    return f"{STATUS_PREFIX}.{escape(service)}.{object_tokens(ref, namespace, name)}"


def parse_sourced(subject: str, prefix: str) -> tuple[str, tuple[str, str, str | None, str]] | None:
    """``{prefix}.{service}.{g}.{k}.{ns}.{name}`` (a status report's or a decision's subject) →
    (service, (group, kind, namespace or None, name)); ``None`` if it is not of that shape."""
    head = prefix + "."
    if not subject.startswith(head):
        return None
    tokens = subject[len(head) :].split(".")
    if len(tokens) != 5:
        return None
    try:
        return unescape(tokens[0]), parse_object_tokens(tokens[1:])
    except (ValueError, KeyError):
        return None


def decision_subject(service: str, ref: KindRef, namespace: str | None, name: str) -> str:
    return f"{DECISIONS_PREFIX}.{escape(service)}.{object_tokens(ref, namespace, name)}"


def requeue_subject(service: str, ref: KindRef, namespace: str | None, name: str) -> str:
    return f"{REQUEUE_PREFIX}.{escape(service)}.{object_tokens(ref, namespace, name)}"


def schedule_subject(service: str, ref: KindRef, namespace: str | None, name: str) -> str:
    return f"{SCHEDULE_PREFIX}.{escape(service)}.{object_tokens(ref, namespace, name)}"


def object_key(ref: KindRef, namespace: str | None, name: str) -> str:
    """Key of an object in the ``aim-objects`` KV mirror."""
    return object_tokens(ref, namespace, name)


def kind_filter(prefix: str, ref: KindRef) -> str:
    """A subject filter matching every object of one kind, e.g. for a consumer."""
    return f"{prefix}.{group_token(ref.group)}.{ref.kind}.>"


def parse_object_tokens(tokens: list[str]) -> tuple[str, str, str | None, str]:
    """``[g, k, ns, name]`` → (group, kind, namespace or None, name)."""
    g, k, ns, name = tokens
    return token_group(g), k, (None if ns == CLUSTER_SCOPE else unescape(ns)), unescape(name)
