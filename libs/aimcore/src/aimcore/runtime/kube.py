"""A small generic Kubernetes client on kubernetes-asyncio's configuration and REST layer.

The generated per-group APIs differ between core, CRD and third-party kinds and pick the wrong
patch content type for dict bodies (and importing them costs ~100 MB per process,
:mod:`aimcore.runtime.kubeclient`); here every call is built from a
:class:`~aimcore.api.kinds.KindRef` (one code path for all kinds) with the content type stated
explicitly, and bodies are plain JSON. Watches are read line by line so bookmarks, ``410 Gone``
and inactivity are handled by the caller (the watcher), not hidden.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, cast

import aiohttp

from aimcore.api.backoff import Backoff
from aimcore.api.errors import AimError
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime import metrics
from aimcore.runtime.kubeclient import ApiException, Configuration, Transport, config
from aimcore.runtime.settings.process import ProxySettings

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"


__all__ = ["APPLY_PATCH", "MERGE_PATCH", "ApiException", "Gone", "Kube", "connect"]

log = logging.getLogger(__name__)


Page = list[Obj]
"""A page of a list's objects."""


class Gone(AimError):
    """The watch's resourceVersion is too old (HTTP 410): re-list (the watcher does, at once)."""

    transient = True


async def connect(kubeconfig: str | None = None, proxy: ProxySettings | None = None) -> Transport:
    """A connection to the API server from a kubeconfig file, or the in-cluster service account;
    through the proxy variables only when ``proxy`` says one is configured (see
    :func:`_without_env_lookups`)."""
    cfg = Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            await config.load_kube_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = 64
    api = Transport(cfg)
    if proxy is None or not proxy.proxy:
        _without_env_lookups(api)
    return api


STALE_CONNECTION_RETRIES = 3

READ_ATTEMPTS = 4
READ_RETRY = Backoff(base=0.2, cap=2.0)
"""A read the API server answered with a server error (:data:`SERVER_ERRORS`) is sent again after
0.2 s doubling (with jitter), :data:`READ_ATTEMPTS` times in all, before the error is the caller's.
The API server passes etcd's transient failures on as ``500``: kube-apiserver 1.20's etcd client
(grpc-go 1.27) fails a large response mid-message now and then under load (``rpc error: code =
Internal desc = unexpected EOF``, issue 44). A read is safe to repeat; a write is left to its caller
(a reconcile that fails is retried with backoff as a whole: :func:`aimcore.api.errors.decide`)."""
SERVER_ERRORS = frozenset({500, 502, 503, 504})


def _without_env_lookups(api: Transport) -> None:
    """kubernetes-asyncio opens its aiohttp session with ``trust_env=True``, which makes every
    request look up proxy variables and parse ``~/.netrc`` in a worker thread (a tenth of the
    status service's CPU under load). The API server is reached directly unless a proxy variable
    is set (a kubeconfig ``proxy-url`` is passed per request and keeps working either way)."""
    session = api.session
    api.session = aiohttp.ClientSession(connector=session.connector, trust_env=False, read_bufsize=2**21)
    session.detach()  # the connector now belongs to the new session


class Kube:
    """Typed-by-KindRef CRUD, status patch, server-side apply, list and watch."""

    def __init__(self, api: Transport, field_manager: str = "aim-operator") -> None:
        self.api = api
        self.field_manager = field_manager

    async def close(self) -> None:
        await self.api.close()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
    ) -> Obj:
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                return await self._send(
                    method, path, query=query, body=body, content_type=content_type, timeout=timeout
                )
            except ApiException as exc:
                if method != "GET" or exc.status not in SERVER_ERRORS or attempt == READ_ATTEMPTS:
                    raise
                delay = READ_RETRY.delay(attempt)
                log.warning("GET %s: %s; reading again in %.2fs", path, describe_error(exc), delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, Any]] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
    ) -> Obj:
        for attempt in range(1, STALE_CONNECTION_RETRIES + 1):
            try:
                response = await self.api.request(
                    method,
                    path,
                    query=query,
                    headers={"Accept": JSON, "Content-Type": content_type},
                    body=body,
                    timeout=timeout,
                )
                return cast(Obj, json.loads(response.data)) if response.data else {}
            except aiohttp.ClientOSError as exc:
                # A pooled keep-alive connection the server closed (an API server restart): the
                # request could not be written, so the server never saw it and sending it again
                # on another connection is safe, whatever the method.
                if exc.errno != errno.EPIPE or attempt == STALE_CONNECTION_RETRIES:
                    raise
        raise AssertionError("unreachable")

    # -- reads ---------------------------------------------------------------------------------

    async def get(self, ref: KindRef, namespace: str | None, name: str) -> Obj | None:
        try:
            return await self._call("GET", ref.path(namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    async def list(
        self, ref: KindRef, namespace: str | None = None, *, label_selector: str | None = None
    ) -> tuple[list[Obj], str]:
        """All objects (paged) and the list's resourceVersion to watch from."""
        items: list[Obj] = []
        rv = ""
        async for page, at in self.pages(ref, namespace, label_selector=label_selector):
            items.extend(page)
            rv = at or rv
        return items, rv

    async def pages(
        self,
        ref: KindRef,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        limit: int = 500,
    ) -> AsyncIterator[tuple[Page, str]]:
        """The objects a page of ``limit`` at a time, each with the resourceVersion to watch from
        (``""`` until the last page): one consistent snapshot, of which only a page need be held
        at once (a watcher's relist of 50,000 objects held them all, and its memory kept the peak)."""
        cont: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", limit)]
            if cont:
                query.append(("continue", cont))
            if label_selector:
                query.append(("labelSelector", label_selector))
            page = await self._call("GET", ref.path(namespace), query=query)
            metrics.LIST_PAGES.labels(ref.group, ref.kind).inc()
            items: Page = page.get("items") or []
            for item in items:  # list items lack apiVersion/kind
                item.setdefault("apiVersion", ref.api_version)
                item.setdefault("kind", ref.kind)
            meta = page.get("metadata") or {}
            cont = meta.get("continue")
            yield items, "" if cont else str(meta.get("resourceVersion") or "")
            if not cont:
                return

    async def watch(
        self,
        ref: KindRef,
        resource_version: str,
        *,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        label_selector: str | None = None,
        opened: Callable[[], object] | None = None,
    ) -> AsyncGenerator[Obj, None]:
        """Raw watch events (``{"type", "object"}``), bookmarks included, until the server ends the
        stream (or the caller closes it: ``contextlib.aclosing``). Raises :class:`Gone` on 410.
        ``opened`` is called once the server has accepted the watch."""
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        if label_selector:
            query.append(("labelSelector", label_selector))
        resp = await self._stream("GET", ref.path(namespace), query, JSON, timeout_seconds + 30)
        if opened is not None:
            opened()
        async with resp:
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                event = cast(Obj, json.loads(line))
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    if status.get("code") == 410:
                        raise Gone(status.get("message", "410 Gone"))
                    raise ApiException(status=status.get("code", 500), reason=status.get("message"))
                obj = event.get("object") or {}
                obj.setdefault("apiVersion", ref.api_version)
                obj.setdefault("kind", ref.kind)
                yield event

    async def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        timeout: float = 60.0,
    ) -> str:
        """A container's log, read through the API server (which fetches it from the pod's kubelet).

        The body is read raw: the generated client would ``json.loads`` a log that happens to be
        valid JSON. An unbound pod (no ``spec.nodeName``) yields ``""``; ``container`` is required
        when the pod has several. Errors (including the kubelet's) raise :class:`ApiException`."""
        query: list[tuple[str, Any]] = []
        if container:
            query.append(("container", container))
        if tail_lines is not None:
            query.append(("tailLines", tail_lines))
        if limit_bytes is not None:
            query.append(("limitBytes", limit_bytes))
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
        return await self.text(path, query=query, timeout=timeout)

    async def text(self, path: str, *, query: Sequence[tuple[str, Any]] = (), timeout: float = 60.0) -> str:
        """A plain-text resource (a pod's log, the API server's ``/metrics``), read raw."""
        resp = await self._stream("GET", path, [*query], "text/plain, */*", timeout)
        async with resp:
            data: bytes = await resp.read()
            return data.decode(resp.charset or "utf-8", errors="replace")

    async def _stream(
        self, method: str, path: str, query: Sequence[tuple[str, Any]], accept: str, timeout: float
    ) -> aiohttp.ClientResponse:
        """The response unread, once its status says it succeeded (:class:`Gone` on 410,
        :class:`ApiException` with the server's message on any other error)."""
        resp: aiohttp.ClientResponse = await self.api.request(
            method, path, query=[*query], headers={"Accept": accept}, timeout=timeout, preload=False
        )
        if 200 <= resp.status <= 299:
            return resp
        async with resp:
            body = (await resp.read()).decode(resp.charset or "utf-8", errors="replace")
        exc = ApiException(status=resp.status, reason=resp.reason)
        exc.body = body  # type: ignore[assignment]  # str, as the client stores bodies
        exc.headers = resp.headers
        if resp.status == 410:
            raise Gone(describe_error(exc)) from exc
        raise exc

    # -- writes --------------------------------------------------------------------------------

    async def create(self, ref: KindRef, body: Obj, namespace: str | None = None) -> Obj:
        """Create the object under this client's field manager (``metadata.managedFields`` then
        names who made it, not the HTTP library's user agent)."""
        ns = namespace or (body.get("metadata") or {}).get("namespace")
        return await self._call("POST", ref.path(ns), query=[("fieldManager", self.field_manager)], body=body)

    async def create_if_absent(self, ref: KindRef, body: Obj, namespace: str | None = None) -> Obj | None:
        """Create the object; None if one of that name exists already (HTTP 409), left as it is."""
        try:
            return await self.create(ref, body, namespace)
        except ApiException as exc:
            if exc.status == 409:
                return None
            raise

    async def apply(self, ref: KindRef, body: Obj, *, force: bool = True) -> Obj:
        """Server-side apply under this client's field manager."""
        meta = body["metadata"]
        query: list[tuple[str, Any]] = [("fieldManager", self.field_manager), ("force", force)]
        return await self._call(
            "PATCH",
            ref.path(meta.get("namespace"), meta["name"]),
            query=query,
            body=body,
            content_type=APPLY_PATCH,
        )

    async def patch(self, ref: KindRef, namespace: str | None, name: str, patch: Obj) -> Obj:
        return await self._call("PATCH", ref.path(namespace, name), body=patch, content_type=MERGE_PATCH)

    async def patch_json(self, ref: KindRef, namespace: str | None, name: str, ops: Sequence[Obj]) -> Obj:
        """A JSON Patch (RFC 6902) of the object."""
        return await self._call("PATCH", ref.path(namespace, name), body=list(ops), content_type=JSON_PATCH)

    async def patch_status(self, ref: KindRef, namespace: str | None, name: str, patch: Obj) -> Obj:
        """Merge-patch the status subresource. Put ``metadata.resourceVersion`` in ``patch`` to
        make it conditional (HTTP 409 when the object changed)."""
        return await self._call(
            "PATCH", ref.path(namespace, name) + "/status", body=patch, content_type=MERGE_PATCH
        )

    async def delete(
        self, ref: KindRef, namespace: str | None, name: str, *, propagation: str = "Background"
    ) -> bool:
        """Delete the object (``propagation``: ``Background``, or ``Foreground`` to keep it, being
        deleted, until its dependents are gone); False if it was not there."""
        try:
            await self._call("DELETE", ref.path(namespace, name), body={"propagationPolicy": propagation})
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise


def describe_error(exc: BaseException) -> str:
    """A one-line description of an error; API errors show status, reason and the server's message."""
    if isinstance(exc, ApiException):
        message = ""
        try:
            message = json.loads(exc.body or "{}").get("message", "")
        except (ValueError, AttributeError):
            message = str(exc.body or "")[:300]
        return f"API error {exc.status} {exc.reason or ''}: {message}".strip()
    return repr(exc)
