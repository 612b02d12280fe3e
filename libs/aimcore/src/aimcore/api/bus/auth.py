"""Who may do what on the bus (DESIGN §9): one NATS user per role, each identified by an NKey and
held to the subjects its work needs, so that no client without a role's key can forge an event, a
status report or a mirror entry, and no role can do another's work.

- **watcher**: the only writer of change events (``aim.events.>``) and of the object mirror
  (``$KV.aim-objects.>``); it declares the streams and buckets.
- **status**: the only consumer of status reports (durable ``aim-status``); publishes its audit
  records.
- **deployer**, **discovery**, **registry-sync**, **cache**: each consumes its own durable consumer
  on ``AIM_EVENTS``, reads the mirror, takes leases, publishes status reports, its own decisions and
  its own requeues. The cache service also receives download progress offers.
- **download**: the download Jobs. They may only *offer* progress (``aim.progress.>``, outside every
  stream); the cache service checks each offer against a per-object token before it becomes a status
  report (:mod:`aimcore.api.bus.progress`), so a Job can speak only for its own object.
- **reader**: ``aimctl events`` / ``describe``: read-only views of the streams and the mirror.
- **admin**: everything; for tests, benchmarks and maintenance, never given to a service.

Every role has its own inbox prefix (``_INBOX.<role>``) and may subscribe to no one else's, so
replies (mirror reads, JetStream deliveries) are not visible to other clients. Consumers of the
system's durables can be created, changed, pulled from, acknowledged and deleted only by their
owner: every role is denied the others' durable names (their info, lag included, stays readable).

NKeys rather than passwords: the server's configuration holds only public keys (nothing secret to
protect in a ConfigMap), and the secret seed never crosses the wire (challenge-response).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import nkeys

from aimcore.api.bus import topology

API = "$JS.API"
ALL_BUCKETS = (
    topology.OBJECTS_BUCKET,
    topology.LEASES_BUCKET,
    topology.DIRTY_BUCKET,
    topology.ELECTION_BUCKET,
    topology.DISCOVERY_BUCKET,
)
ALL_STREAMS = (topology.EVENTS_STREAM, topology.STATUS_STREAM, topology.DECISIONS_STREAM)
PROGRESS_PREFIX = "aim.progress"

SERVICES = ("deployer", "discovery", "registry-sync", "cache")


def kv_stream(bucket: str) -> str:
    return f"KV_{bucket}"


def inbox_prefix(role: str) -> str:
    """The inbox prefix a role's client uses; only that role may subscribe under it."""
    return f"_INBOX.{role}"


# -- permission building blocks ------------------------------------------------------------------


def _durable_ops(stream: str, durable: str) -> list[str]:
    """Every subject that creates, changes, pulls from or acknowledges one durable consumer."""
    return [
        f"{API}.CONSUMER.CREATE.{stream}.{durable}",
        f"{API}.CONSUMER.CREATE.{stream}.{durable}.>",
        f"{API}.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"{API}.CONSUMER.DELETE.{stream}.{durable}",
        f"{API}.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
    ]


def consume(stream: str, durable: str) -> list[str]:
    """Bind and work a durable consumer (its owner's rights)."""
    return [
        f"{API}.STREAM.INFO.{stream}",
        f"{API}.CONSUMER.INFO.{stream}.{durable}",
        *_durable_ops(stream, durable),
    ]


def browse(stream: str) -> list[str]:
    """Read a stream: its info, single messages, and ephemeral consumers (named or not) that this
    client creates, pulls from and deletes. The system's durables are denied separately."""
    return [
        f"{API}.STREAM.INFO.{stream}",
        f"{API}.STREAM.MSG.GET.{stream}",
        f"{API}.DIRECT.GET.{stream}",
        f"{API}.DIRECT.GET.{stream}.>",
        f"{API}.CONSUMER.CREATE.{stream}",
        f"{API}.CONSUMER.CREATE.{stream}.*",
        f"{API}.CONSUMER.CREATE.{stream}.*.>",
        f"{API}.CONSUMER.INFO.{stream}.*",
        f"{API}.CONSUMER.MSG.NEXT.{stream}.*",
        f"{API}.CONSUMER.DELETE.{stream}.*",
        f"$JS.FC.{stream}.>",  # flow-control replies of ordered consumers (KV watches)
    ]


def kv_read(bucket: str) -> list[str]:
    return browse(kv_stream(bucket))


def kv_write(bucket: str) -> list[str]:
    return [*kv_read(bucket), f"$KV.{bucket}.>"]


def declare(*streams: str) -> list[str]:
    """Create and update streams (the watcher owns the topology)."""
    return [f"{API}.{op}.{s}" for s in streams for op in ("STREAM.CREATE", "STREAM.UPDATE", "STREAM.INFO")]


# -- roles -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Role:
    name: str
    summary: str
    publish: tuple[str, ...]
    subscribe: tuple[str, ...] = ()
    owns: tuple[tuple[str, str], ...] = ()  # (stream, durable) this role's consumers
    unrestricted: bool = False

    @property
    def user(self) -> str:
        return f"aim-{self.name}"


def durable(service: str) -> str:
    return f"aim-{service}"


def _service_role(name: str, summary: str, *extra_pub: str, subscribe: Sequence[str] = ()) -> Role:
    stream = topology.EVENTS_STREAM
    return Role(
        name=name,
        summary=summary,
        publish=(
            f"{API}.INFO",
            *consume(stream, durable(name)),
            *kv_read(topology.OBJECTS_BUCKET),
            *kv_write(topology.LEASES_BUCKET),
            *kv_write(topology.DIRTY_BUCKET),
            "aim.status.>",
            f"aim.decisions.{name}.>",
            f"aim.requeue.{name}.>",
            *extra_pub,
        ),
        subscribe=tuple(subscribe),
        owns=((stream, durable(name)),),
    )


ROLES: tuple[Role, ...] = (
    Role(
        name="watcher",
        summary="writes change events and the object mirror; declares streams and buckets",
        publish=(
            f"{API}.INFO",
            *declare(*ALL_STREAMS, *(kv_stream(b) for b in ALL_BUCKETS)),
            *kv_write(topology.OBJECTS_BUCKET),
            *kv_write(topology.ELECTION_BUCKET),
            "aim.events.>",
        ),
    ),
    Role(
        name="status",
        summary="consumes status reports (the only one); writes .status; publishes its audit records",
        publish=(
            f"{API}.INFO",
            *consume(topology.STATUS_STREAM, "aim-status"),
            f"{API}.STREAM.MSG.GET.{topology.STATUS_STREAM}",
            *kv_read(topology.OBJECTS_BUCKET),
            "aim.decisions.status.>",
        ),
        owns=((topology.STATUS_STREAM, "aim-status"),),
    ),
    _service_role("deployer", "reconciles AIMServices"),
    _service_role(
        "discovery",
        "reconciles models and templates; runs discovery Jobs",
        *kv_write(topology.DISCOVERY_BUCKET),
    ),
    _service_role("registry-sync", "reconciles model sources"),
    _service_role(
        "cache",
        "reconciles caches and LLMKube Models; relays download progress",
        subscribe=(f"{PROGRESS_PREFIX}.>",),
    ),
    Role(
        name="download",
        summary="download Jobs: may only offer progress, which the cache service verifies",
        publish=(f"{PROGRESS_PREFIX}.>",),
    ),
    Role(
        name="reader",
        summary="aimctl events / describe: reads the streams and the mirror, changes nothing",
        publish=(
            f"{API}.INFO",
            *(p for s in ALL_STREAMS for p in browse(s)),
            *kv_read(topology.OBJECTS_BUCKET),
        ),
    ),
    Role(
        name="admin", summary="tests, benchmarks, maintenance; never a service", publish=(), unrestricted=True
    ),
)
ROLE_NAMES = tuple(r.name for r in ROLES)


def role(name: str) -> Role:
    for r in ROLES:
        if r.name == name:
            return r
    raise KeyError(f"no bus role {name!r} (known: {', '.join(ROLE_NAMES)})")


def permissions(r: Role) -> dict[str, object] | None:
    """The role's NATS permissions block (``None``: unrestricted)."""
    if r.unrestricted:
        return None
    owned = set(r.owns)
    deny = [
        subject
        for other in ROLES
        for stream, name in other.owns
        if (stream, name) not in owned
        for subject in _durable_ops(stream, name)
    ]
    out: dict[str, object] = {
        "publish": {"allow": list(dict.fromkeys(r.publish)), **({"deny": deny} if deny else {})},
        "subscribe": {"allow": [f"{inbox_prefix(r.name)}.>", *r.subscribe]},
    }
    return out


# -- keys ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """A role's NKey: the public key (server side) and the seed (the client's secret)."""

    role: str
    public: str
    seed: str


def new_identity(role_name: str) -> Identity:
    role(role_name)  # validate
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    kp = nkeys.from_seed(bytearray(seed))
    try:
        return Identity(role_name, kp.public_key.decode(), seed.decode())
    finally:
        kp.wipe()


def public_key(seed: str) -> str:
    kp = nkeys.from_seed(bytearray(seed.strip().encode()))
    try:
        return str(kp.public_key.decode())
    finally:
        kp.wipe()


class Credentials:
    """A directory of seeds, one file per role (``<role>.nk``, mode 0600): what the embedded stack
    and the test servers generate, and where local clients find their key."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def seed_file(self, role_name: str) -> Path:
        return self.root / f"{role_name}.nk"

    def ensure(self, roles: Iterable[str] = ROLE_NAMES) -> dict[str, Identity]:
        """Read the seeds that exist, generate the missing ones."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        out: dict[str, Identity] = {}
        for name in roles:
            path = self.seed_file(name)
            if path.exists():
                seed = path.read_text().strip()
                out[name] = Identity(name, public_key(seed), seed)
                continue
            ident = new_identity(name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(ident.seed + "\n")
            out[name] = ident
        return out


# -- server configuration ------------------------------------------------------------------------

DEFAULT_MAX_PAYLOAD = 8 * 1024 * 1024
"""The server's largest message (nats-server's own default is 1 MiB). The mirror stores whole
objects; 8 MiB is above anything the API server stores (etcd refuses requests over 1.5 MiB by
default and the API server bodies over 3 MiB), so no object is refused for its size under the
shipped configuration. The watcher still reads the limit from the server it is connected to and
reports any object above it as ``ObjectTooLarge`` (a server configured lower, or a bigger etcd)."""


@dataclass(frozen=True)
class Tls:
    cert_file: str
    key_file: str
    ca_file: str | None = None
    verify_clients: bool = False


def authorization(keys: Mapping[str, str]) -> dict[str, object]:
    """The ``authorization`` block: one user per role in ``keys`` (role → public key, or a
    ``$VARIABLE`` the server resolves from its environment)."""
    users: list[dict[str, object]] = []
    for name, key in keys.items():
        user: dict[str, object] = {"nkey": key}
        perms = permissions(role(name))
        if perms is not None:
            user["permissions"] = perms
        users.append(user)
    return {"users": users}


def render_config(
    keys: Mapping[str, str],
    *,
    max_payload: int = DEFAULT_MAX_PAYLOAD,
    tls: Tls | None = None,
    extra: Mapping[str, object] | None = None,
) -> str:
    """A nats-server configuration (JSON is valid NATS configuration syntax). A key written as
    ``$NAME`` is left unquoted, so the server takes it from its environment variable ``NAME``."""
    config: dict[str, object] = {"max_payload": max_payload, **(extra or {})}
    if tls is not None:
        block: dict[str, object] = {"cert_file": tls.cert_file, "key_file": tls.key_file}
        if tls.ca_file:
            block["ca_file"] = tls.ca_file
        if tls.verify_clients:
            block["verify"] = True
        config["tls"] = block
    config["authorization"] = authorization(keys)
    text = json.dumps(config, indent=2)
    for key in keys.values():
        if key.startswith("$"):
            text = text.replace(json.dumps(key), key)
    return text + "\n"
