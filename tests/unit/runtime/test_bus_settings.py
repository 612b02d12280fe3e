"""The bus's roles and client settings, without a server (the shipped authorization on a real
nats-server: ``tests/nats/test_bus_permissions.py``; TLS: ``tests/nats/test_bus_tls.py``): every
durable consumer is owned by exactly one role, and a service's settings come from its environment."""

from __future__ import annotations

import pytest

from aimcore.api.bus import auth, topology
from aimcore.runtime.bus import BusSettings


def test_every_durable_is_owned_by_exactly_one_role() -> None:
    owners: dict[tuple[str, str], list[str]] = {}
    for r in auth.ROLES:
        for durable in r.owns:
            owners.setdefault(durable, []).append(r.name)
    assert owners == {
        (topology.STATUS_STREAM, "aim-status"): ["status"],
        **{(topology.EVENTS_STREAM, f"aim-{s}"): [s] for s in auth.SERVICES},
    }


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIM_NATS_URL", "tls://aim-nats.aim-system:4222")
    monkeypatch.setenv("AIM_NATS_SEED_FILE", "/var/run/secrets/aim/bus/seed")
    monkeypatch.setenv("AIM_NATS_TLS_CA_FILE", "/var/run/secrets/aim/bus-tls/ca.crt")
    monkeypatch.delenv("AIM_NATS_ROLE", raising=False)
    settings = BusSettings().as_role("deployer")
    assert settings.role == "deployer" and settings.url.startswith("tls://")
    assert settings.env() == {
        "AIM_NATS_URL": "tls://aim-nats.aim-system:4222",
        "AIM_NATS_ROLE": "deployer",
        "AIM_NATS_SEED_FILE": "/var/run/secrets/aim/bus/seed",
        "AIM_NATS_TLS_CA_FILE": "/var/run/secrets/aim/bus-tls/ca.crt",
    }
