"""Helpers shared by the tests: waiting on conditions, following a kind's changes, and kubectl as a
user would run it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from aim_deployer.overrides import Overrides
from aim_dev.local.binaries import run_kubectl
from aimcore.api.kinds import HTTP_ROUTE, KindRef
from aimcore.domain.outbound import OutboundPolicy
from aimcore.runtime import ApiException, Kube, describe_error
from aimcore.runtime.kube import SERVER_ERRORS, connect

T = TypeVar("T")

PATIENCE = float(os.environ.get("AIM_TEST_PATIENCE", "3"))
"""How many times its stated timeout a wait on a condition (:func:`eventually`) and a test
(``tests/conftest.py``) may take before it fails. A timeout here is a ceiling, never a measurement: a
passing wait returns as soon as its condition holds, so only a failing one pays for the margin. The
stated figures hold on a quiet two-core machine; beside another stack (load average 9 to 17 on two
cores, the machine CI may share) a Job the cache service creates took longer than its 30 s and a
test's own timeout ran out in its teardown. ``AIM_TEST_PATIENCE=1`` keeps the stated figures (a
quick failure while working on a test)."""

LOOPBACK_HOSTS = "127.0.0.1,localhost"
"""What the tests allow-list for outbound connections (``AIM_OUTBOUND_ALLOWED_HOSTS``): their servers
run on loopback. Other loopback addresses (127.0.0.2...) stay refused."""
LOOPBACK = OutboundPolicy(allowed_hosts=frozenset(LOOPBACK_HOSTS.split(",")))
"""That allow-list as a policy, for in-process code under test that reaches the test servers (code
is handed its policy, as a service hands its clients the one it read at start-up)."""


async def eventually(
    probe: Callable[[], Awaitable[T | None]], timeout: float = 20.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; fail with ``what`` after ``timeout`` times
    :data:`PATIENCE`."""
    last: T | None = None
    timeout *= PATIENCE
    try:
        async with asyncio.timeout(timeout):
            while True:
                last = await probe()
                if last:
                    return last
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what or probe}; last={last!r}"
        ) from None


async def stored_messages(js: JetStreamContext, subject: str, stream: str | None = None) -> list[Msg]:
    """Every message a stream holds under ``subject`` now, oldest first: an ephemeral consumer read
    until it has none pending (``num_pending == 0``). Not until a silence: under load a silence
    comes before the last message, and a check that something is absent proves nothing then."""
    config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL)
    sub = await js.pull_subscribe(subject, stream=stream, config=config)
    messages: list[Msg] = []
    try:
        while (await sub.consumer_info()).num_pending:
            messages += await sub.fetch(500, timeout=5)
    finally:
        await sub.unsubscribe()
    return messages


def missing_or_changed(written: Any, read: Any, path: str = "") -> list[str]:
    """Paths of ``written`` that ``read`` lacks or holds differently (what the API server or a model
    pruned or changed); fields added (defaults) are fine. Empty: everything written is kept."""
    if isinstance(written, dict):
        if not isinstance(read, dict):
            return [path or "<root>"]
        return [p for k, v in written.items() for p in missing_or_changed(v, read.get(k), f"{path}.{k}")]
    if isinstance(written, list):
        if not isinstance(read, list) or len(read) != len(written):
            return [path]
        return [
            p
            for i, (a, b) in enumerate(zip(written, read, strict=True))
            for p in missing_or_changed(a, b, f"{path}[{i}]")
        ]
    return [] if written == read else [f"{path}: wrote {written!r}, read {read!r}"]


REFUSAL_MARKER = "aim.refusal-marker"
"""A subject no role but the admin may publish to: its refusal marks the end of a client's answers."""


async def refusals_settled(nc: NatsClient, errors: list[str], timeout: float = 10.0) -> None:
    """Wait until the server has answered every command ``nc`` has sent, refusals included, where
    ``errors`` collects the client's error callbacks (``str(exc)``). A flush is no barrier for
    them: the server's ``-ERR`` for a refused publish may come after its answer to a later PING
    (issue 24). Its refusals do come in the order of the commands, so this publishes to
    :data:`REFUSAL_MARKER` last and waits for that refusal (``nc`` must not be the admin's)."""
    marker = f"{REFUSAL_MARKER}.{secrets.token_hex(4)}"
    await nc.publish(marker, b"")
    await nc.flush(timeout=5)

    async def refused() -> bool:
        return any(marker in e.lower() for e in errors)

    await eventually(refused, timeout=timeout, what=f"the refusal of {marker}")


async def refused_connection(servers: str, **options: Any) -> str:
    """What a nats-server says when it refuses a client connecting to ``servers`` with ``options``
    (once, no reconnecting). The refused client is closed here: nats-py's ``connect`` raises
    without closing its socket when reconnecting is off, which leaks the socket (a
    ``ResourceWarning``, an error in this suite)."""
    nc = NatsClient()
    try:
        with pytest.raises(NatsError) as refused:
            await nc.connect(servers, allow_reconnect=False, max_reconnect_attempts=0, **options)
    finally:
        await nc.close()
    return str(refused.value)


async def api_requests(kube: Kube, verb: str, resource: str, code: str | None = None) -> float:
    """How many ``verb`` requests on ``resource`` (answered ``code``, if given) the API server has
    served: its own ``apiserver_request_total``, read from ``/metrics`` (a real count of what
    reached it, whoever sent it)."""
    total = 0.0
    for line in str(await kube.text("/metrics")).splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition("} ")
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
        wanted = labels.get("verb") == verb and labels.get("resource") == resource
        if wanted and (code is None or labels.get("code") == code):
            total += float(value)
    return total


def kubectl(
    *args: str, kubeconfig: str | Path | None = None, stdin: str | None = None, check: bool = True
) -> str:
    """kubectl's stdout; fails the test (with kubectl's stderr) when it fails and ``check`` is set."""
    done = run_kubectl(*args, kubeconfig=kubeconfig, stdin=stdin)
    if check:
        assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stderr}"
    return done.stdout


def manifest(
    ref: KindRef, name: str, namespace: str | None, spec: dict[str, Any], **meta: Any
) -> dict[str, Any]:
    """An object of ``ref``'s kind as a user would apply it."""
    metadata: dict[str, Any] = {"name": name, **meta}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": metadata, "spec": spec}


@contextlib.asynccontextmanager
async def kube_at(kubeconfig: str) -> AsyncIterator[Kube]:
    """A client of the API server ``kubeconfig`` names, writing as the tests do (``aim-tests``)."""
    kube = Kube(await connect(kubeconfig), field_manager="aim-tests")
    try:
        yield kube
    finally:
        await kube.close()


async def status_of(  # noqa: PLR0917
    kube: Kube, ref: Any, namespace: str | None, name: str, predicate: Any, what: str
) -> Any:
    """The object once its status satisfies ``predicate``, read from the API server until then (45
    s). A read the API server keeps failing (:data:`~aimcore.runtime.kube.SERVER_ERRORS`, after the
    client's own retries) is a "not yet", as any other client would take it (issue 44), and named
    if the wait runs out."""
    seen: dict[str, Any] = {}

    async def probe() -> dict[str, Any] | None:
        try:
            obj = await kube.get(ref, namespace, name)
        except ApiException as exc:
            if exc.status not in SERVER_ERRORS:
                raise
            seen["error"] = describe_error(exc)
            return None
        seen.pop("error", None)
        status = seen["status"] = (obj or {}).get("status") or {}
        return obj if status and predicate(status) else None

    try:
        return await eventually(probe, timeout=45, what=what)
    except AssertionError as exc:
        error = f"; the last read failed: {seen['error']}" if "error" in seen else ""
        raise AssertionError(f"{exc}; status was {json.dumps(seen.get('status'))}{error}") from None


async def gateway_accepts(kube: Kube, namespace: str, *, timeout: float = 30.0) -> None:
    """A gateway's word on the one HTTPRoute in ``namespace`` (no gateway runs in the test stacks):
    ``Accepted`` by the parent ``gw``, once the route exists."""

    async def route() -> dict[str, Any] | None:
        routes = (await kube.list(HTTP_ROUTE, namespace))[0]
        return routes[0] if routes else None

    found = await eventually(route, timeout=timeout, what="the HTTPRoute")
    accepted = {"type": "Accepted", "status": "True", "reason": "Accepted", "message": ""}
    parent = {
        "parentRef": {"name": "gw"},
        "controllerName": "example.com/gw",
        "conditions": [{**accepted, "lastTransitionTime": "2026-11-29T00:00:00Z"}],
    }
    await kube.patch_status(
        HTTP_ROUTE, namespace, found["metadata"]["name"], {"status": {"parents": [parent]}}
    )


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == type_), {})


def has(type_: str, status: str, reason: str) -> Any:
    def check(s: dict[str, Any]) -> bool:
        c = condition(s, type_)
        return c.get("status") == status and c.get("reason") == reason

    return check


class Following:
    """A watch of the test's own over one kind in one namespace, from the moment it starts, that
    outlives the API server's watch timeouts; a subclass handles each object event in ``seen``."""

    def __init__(self, kube: Kube, ref: KindRef, namespace: str) -> None:
        self.kube, self.ref, self.namespace = kube, ref, namespace
        self.task: asyncio.Task[None] | None = None

    def seen(self, event: dict[str, Any]) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        _, rv = await self.kube.list(self.ref, self.namespace)
        self.task = asyncio.create_task(self._follow(rv))

    async def _follow(self, rv: str) -> None:
        while True:
            async for event in self.kube.watch(self.ref, rv, namespace=self.namespace, timeout_seconds=30):
                rv = event["object"]["metadata"]["resourceVersion"]
                if event["type"] != "BOOKMARK":  # a bookmark is a place in the watch, no object
                    self.seen(event)

    def assert_following(self) -> None:
        """The watch still runs (one that failed would have seen only part of the changes)."""
        assert self.task is not None and not self.task.done(), self.task and self.task.exception()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


RESOURCE_QUOTA = KindRef("", "v1", "ResourceQuota", "resourcequotas", True)


async def quota_of_none(kube: Kube, namespace: str, resource: str) -> str:
    """A ResourceQuota allowing no object of ``resource`` (``count/jobs.batch``...) in
    ``namespace``: the API server then refuses to create one (403, exceeded quota), as a platform
    team's quota would. Returns its name once the quota controller has counted it: until then the
    API server's quota admission may not know the quota yet (its informer lags under load, and an
    earlier lookup that found none in the namespace is remembered for 30 s), and let a create
    through."""
    name = f"no-{secrets.token_hex(3)}"
    body = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": {resource: "0"}},
    }
    await kube.create(RESOURCE_QUOTA, body, namespace)

    async def counted() -> bool:
        found = await kube.get(RESOURCE_QUOTA, namespace, name)
        return resource in (((found or {}).get("status") or {}).get("hard") or {})

    await eventually(counted, timeout=30, what=f"the quota {name} counted")
    return name


async def lift_quota(
    kube: Kube,
    namespace: str,
    quota: str,
    *,
    poke: tuple[KindRef, str],
    until: Callable[[], Awaitable[bool]],
    what: str,
) -> None:
    """Delete ``quota``, then change the object ``poke`` names (a label) until ``until``: a
    refusal for permission is retried with a backoff of a minute, a change reconciles at once, and
    the API server's quota admission may still refuse for a moment after the quota is gone (CI
    saw a single change refused again)."""
    await kube.delete(RESOURCE_QUOTA, namespace, quota)
    changes = iter(range(100))

    async def changed_until_done() -> bool:
        if await until():
            return True
        ref, name = poke
        await kube.patch(ref, namespace, name, {"metadata": {"labels": {"retry": f"now-{next(changes)}"}}})
        return False

    await eventually(changed_until_done, timeout=60, interval=2.0, what=what)


def as_overrides(raw: dict[str, Any] | None) -> Overrides | None:
    """A service's ``spec.overrides`` as the deployer reads it, given as written: in the legacy
    group's spelling when it has a ``gpuSelector``, else the current group's."""
    group = "aim.silogen.ai" if raw and "gpuSelector" in raw else "aim.eai.amd.com"
    return Overrides.parse(group, raw)
