"""The bus roles' Secrets as a cluster holds them: one ``aim-bus-<role>`` per role a cluster
installation has, with the seed its clients use, its public key, the previous key while a rotation
is under way, and the keys NATS accepts for the role (``accepted.conf``, which the NATS pod mounts).

One definition serves everyone who writes them: the in-cluster Job that makes them on a first
install (:mod:`aimcore.runtime.bus_credentials`), ``aimctl bus credentials`` (which prints them and
rotates them) and the development stack. Pure: no I/O.
"""

from __future__ import annotations

import base64
from typing import Any

from aimcore.api.bus import auth

DEPLOYED_ROLES = tuple(r for r in auth.ROLE_NAMES if r != "admin")
"""The roles a cluster installation has: every service's, the download Jobs', aimctl's reader
(``admin`` is never given to anything deployed)."""

ROLE_LABEL = "aim.eai.amd.com/bus-role"
COMPONENT = "bus-credentials"
SEED = "seed"
NKEY = "nkey"
PREVIOUS = "previous-nkey"
ACCEPTED = "accepted.conf"


def secret_name(role: str) -> str:
    return f"aim-bus-{role}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def role_secret(role: str, seed: str, previous: str | None, namespace: str) -> dict[str, Any]:
    """The Secret ``aim-bus-<role>`` for ``seed``, and ``previous`` (a public key) while a rotation
    is under way."""
    current = auth.public_key(seed)
    data = {SEED: _b64(seed), NKEY: _b64(current)}
    if previous is not None:
        data[PREVIOUS] = _b64(previous)
    data[ACCEPTED] = _b64(auth.accepted_keys_conf(role, current, previous))
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": secret_name(role),
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/part-of": "aim-engine",
                "app.kubernetes.io/component": COMPONENT,
                ROLE_LABEL: role,
            },
        },
        "data": data,
    }
