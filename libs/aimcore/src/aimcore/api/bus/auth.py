"""Who may do what on the bus (docs/design.md#security): one NATS user per role, each identified by
an NKey and held to the subjects its work needs, so that no client without a role's key can forge an
event, a status report or a mirror entry, and no role can do another's work.

- **watcher**: the only writer of change events (``aim.events.>``) and of the object mirror
  (``$KV.aim-objects.>``); it declares the streams and buckets.
- **status**: the only consumer of status reports (durable ``aim-status``); publishes its audit
  records.
- **deployer**, **discovery**, **registry-sync**, **cache**: each consumes its own durable consumer
  on ``AIM_EVENTS``, reads the mirror, takes its own leases (``$KV.aim-leases.<service>.>``: no
  service can hold, mark or give back another's), publishes status reports under its own name for
  the kinds it owns only (``aim.status.<service>.<group>.<Kind>.>``, from
  :data:`aimcore.api.kinds.STATUS_OWNERS`), its own decisions, requeues and schedules. The cache
  service also receives download progress offers.
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

Rotation without a restart: the server accepts two keys per role, each a user with the role's
permissions: the current one (``$AIM_NKEY_<ROLE>``) and the previous one
(``$AIM_NKEY_<ROLE>_PREVIOUS``), both defined in a small per-role file the configuration includes
(:func:`accepted_keys_conf`). A rotation writes a new seed and keeps the old public key as the
previous one; clients move to the new seed as they restart while the old one still works; retiring
drops the previous key. nats-server re-reads the included files on a configuration reload (SIGHUP)
and closes the connections of keys it no longer accepts. When no rotation is under way the
previous slot holds a key whose seed was never kept (nats-server refuses the same key twice).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import nkeys

from aimcore.api.bus import subjects, topology
from aimcore.api.errors import AimError
from aimcore.api.kinds import STATUS_OWNERS

API = "$JS.API"
ALL_BUCKETS = (
    topology.OBJECTS_BUCKET,
    topology.LEASES_BUCKET,
    topology.ELECTION_BUCKET,
    topology.DISCOVERY_BUCKET,
    topology.WATCHER_BUCKET,
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
            *kv_read(topology.LEASES_BUCKET),
            f"$KV.{topology.LEASES_BUCKET}.{subjects.escape(name)}.>",  # its own leases only
            *(
                subjects.kind_filter(f"{subjects.STATUS_PREFIX}.{subjects.escape(name)}", k)
                for k in STATUS_OWNERS[name]
            ),
            f"aim.decisions.{name}.>",
            f"aim.requeue.{name}.>",
            f"aim.schedule.{name}.>",
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
            *kv_write(topology.WATCHER_BUCKET),  # where a new leader's watches resume
            *browse(topology.EVENTS_STREAM),  # which mirrored versions were published (a new leader)
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


_USER_KEY = re.compile(r"U[A-Z2-7]{55}")
"""A user's public NKey (base32 of its prefix, 32 bytes and a checksum): nothing else is written
into the server's configuration."""


def unusable_key() -> str:
    """A valid user public key that no one can authenticate as: its seed is never kept. It fills a
    role's previous-key slot when no rotation is under way."""
    return new_identity("admin").public


def key_variable(role_name: str, *, previous: bool = False) -> str:
    """The configuration variable a role's accepted key is written in (the current or previous)."""
    return "AIM_NKEY_" + role_name.upper().replace("-", "_") + ("_PREVIOUS" if previous else "")


def accepted_keys_conf(role_name: str, current: str, previous: str | None = None) -> str:
    """The per-role file the server configuration includes: the two keys the role may connect
    with (``previous`` ``None``: no rotation under way, the slot gets :func:`unusable_key`)."""
    role(role_name)
    for key in (current, previous):
        if key is not None and not _USER_KEY.fullmatch(key):
            raise ValueError(f"not an NKey public key for role {role_name!r}")
    return (
        f'{key_variable(role_name)}: "{current}"\n'
        f'{key_variable(role_name, previous=True)}: "{previous or unusable_key()}"\n'
    )


class RotationError(AimError, ValueError):
    """A rotation step that does not apply (a rotation already under way, or none to retire): an
    operator's command refused, never a condition (no reason of its own)."""


class Credentials:
    """A directory of seeds, one file per role (``<role>.nk``, mode 0600): what the embedded stack
    and the test servers generate, and where local clients find their key. During a rotation the
    role's previous public key is kept next to it (``<role>.previous.pub``) until it is retired."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def seed_file(self, role_name: str) -> Path:
        return self.root / f"{role_name}.nk"

    def previous_file(self, role_name: str) -> Path:
        return self.root / f"{role_name}.previous.pub"

    def identity(self, role_name: str) -> Identity:
        seed = self.seed_file(role_name).read_text().strip()
        return Identity(role_name, public_key(seed), seed)

    def previous(self, role_name: str) -> str | None:
        """The previous public key still accepted (``None``: no rotation under way)."""
        path = self.previous_file(role_name)
        return path.read_text().strip() if path.exists() else None

    def accepted(self, role_name: str) -> tuple[str, ...]:
        """The public keys the server accepts for the role: the current one, then the previous."""
        previous = self.previous(role_name)
        return (self.identity(role_name).public, *((previous,) if previous else ()))

    def rotate(self, role_name: str) -> Identity:
        """A new seed for the role; the old public key stays accepted until :meth:`retire`."""
        if self.previous(role_name) is not None:
            raise RotationError(f"a rotation of {role_name!r} is under way: retire its previous key first")
        old = self.identity(role_name)
        new = new_identity(role_name)
        self.previous_file(role_name).write_text(old.public + "\n")
        _write_private(self.seed_file(role_name), new.seed + "\n")
        return new

    def retire(self, role_name: str) -> str:
        """Stop accepting the role's previous key; answers the key retired."""
        previous = self.previous(role_name)
        if previous is None:
            raise RotationError(f"no rotation of {role_name!r} is under way: nothing to retire")
        self.previous_file(role_name).unlink()
        return previous

    def write_accepted(self, directory: Path, roles: Iterable[str] = ROLE_NAMES) -> None:
        """The per-role files the server configuration includes (``<directory>/<role>.conf``)."""
        directory.mkdir(parents=True, exist_ok=True)
        for name in roles:
            text = accepted_keys_conf(name, self.identity(name).public, self.previous(name))
            tmp = directory / f".{name}.conf.tmp"
            tmp.write_text(text)
            tmp.replace(directory / f"{name}.conf")

    def keep(self, role_name: str, seed: str) -> Identity:
        """The role's seed as another holder has it (a cluster's Secret), replacing any here."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        _write_private(self.seed_file(role_name), seed.strip() + "\n")
        return Identity(role_name, public_key(seed.strip()), seed.strip())

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


def _write_private(path: Path, text: str) -> None:
    """Replace a seed file at once (a reader sees the old seed or the new one), mode 0600."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    tmp.replace(path)


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


def route_tls(tls: Tls) -> dict[str, object]:
    """The ``tls`` block of a cluster's routes: each server presents its certificate and verifies
    the other's against the CA bundle (a route is a server joining the cluster: without this,
    anything that reaches the route port joins it and reads every stream)."""
    block: dict[str, object] = {"cert_file": tls.cert_file, "key_file": tls.key_file, "verify": True}
    if tls.ca_file:
        block["ca_file"] = tls.ca_file
    return block


def _keys_of(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def authorization(keys: Mapping[str, str | Sequence[str]]) -> dict[str, object]:
    """The ``authorization`` block: one user per key of each role in ``keys`` (role → its public
    key or keys, each a key or a ``$VARIABLE`` the server resolves from an included file or its
    environment), every one with the role's permissions."""
    users: list[dict[str, object]] = []
    for name, value in keys.items():
        perms = permissions(role(name))
        for key in _keys_of(value):
            user: dict[str, object] = {"nkey": key}
            if perms is not None:
                user["permissions"] = perms
            users.append(user)
    return {"users": users}


def rotatable_keys(roles: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each role's two key slots as variables (current, previous), for :func:`render_config` with
    the files of :func:`accepted_keys_conf` included."""
    return {r: (f"${key_variable(r)}", f"${key_variable(r, previous=True)}") for r in roles}


def render_config(
    keys: Mapping[str, str | Sequence[str]],
    *,
    includes: Sequence[str] = (),
    max_payload: int = DEFAULT_MAX_PAYLOAD,
    tls: Tls | None = None,
    extra: Mapping[str, object] | None = None,
) -> str:
    """A nats-server configuration (JSON is valid NATS configuration syntax). A key written as
    ``$NAME`` is left unquoted, so the server takes it from a variable ``NAME`` defined in one of
    the ``includes`` (files read again on every configuration reload; nats-server takes every
    include path relative to the configuration file's directory) or from its environment."""
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
    for value in keys.values():
        for key in _keys_of(value):
            if key.startswith("$"):
                text = text.replace(json.dumps(key), key)
    if includes:
        head = "".join(f"  include {json.dumps(path)}\n" for path in includes)
        text = "{\n" + head + text.removeprefix("{\n")
    return text + "\n"
