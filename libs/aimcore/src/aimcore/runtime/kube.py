"""A small generic Kubernetes client on top of kubernetes-asyncio's ``ApiClient``.

The generated per-group APIs differ between core, CRD and third-party kinds and pick the wrong
patch content type for dict bodies; here every call is built from a :class:`~aimcore.api.kinds.KindRef`
(one code path for all kinds) with the content type stated explicitly. Watches are read line by
line so bookmarks, ``410 Gone`` and inactivity are handled by the caller (the watcher), not hidden.
"""

from __future__ import annotations

import errno
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import aiohttp
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from aimcore.api.errors import AimError
from aimcore.api.kinds import KindRef
from aimcore.api.types import Obj
from aimcore.runtime.settings.process import ProxySettings

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"


__all__ = ["APPLY_PATCH", "MERGE_PATCH", "ApiException", "Gone", "Kube", "connect"]


class Gone(AimError):
    """The watch's resourceVersion is too old (HTTP 410): re-list (the watcher does, at once)."""

    transient = True


async def connect(kubeconfig: str | None = None) -> client.ApiClient:
    """An API client from a kubeconfig file, or the in-cluster service account."""
    cfg = client.Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            await config.load_kube_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = 64
    api = client.ApiClient(configuration=cfg)
    _without_env_lookups(api)
    return api


STALE_CONNECTION_RETRIES = 3


def _without_env_lookups(api: client.ApiClient) -> None:
    """kubernetes-asyncio opens its aiohttp session with ``trust_env=True``, which makes every
    request look up proxy variables and parse ``~/.netrc`` in a worker thread (a tenth of the
    status service's CPU under load). The API server is reached directly unless a proxy variable
    is set (a kubeconfig ``proxy-url`` is passed per request and keeps working either way)."""
    if ProxySettings().proxy:
        return
    rest = api.rest_client
    session: aiohttp.ClientSession = rest.pool_manager
    rest.pool_manager = aiohttp.ClientSession(
        connector=session.connector, trust_env=False, read_bufsize=2**21
    )
    session.detach()  # the connector now belongs to the new session


class Kube:
    """Typed-by-KindRef CRUD, status patch, server-side apply, list and watch."""

    def __init__(self, api: client.ApiClient, field_manager: str = "aim-operator") -> None:
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
        for attempt in range(1, STALE_CONNECTION_RETRIES + 1):
            try:
                result = await self.api.call_api(
                    path,
                    method,
                    query_params=query or [],
                    header_params={"Accept": JSON, "Content-Type": content_type},
                    body=body,
                    response_types_map={200: "object", 201: "object", 202: "object"},
                    auth_settings=["BearerToken"],
                    _return_http_data_only=True,
                    _request_timeout=timeout,
                )
                return cast(Obj, result)
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
        cont: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", 500)]
            if cont:
                query.append(("continue", cont))
            if label_selector:
                query.append(("labelSelector", label_selector))
            page = await self._call("GET", ref.path(namespace), query=query)
            items.extend(page.get("items") or [])
            cont = page.get("metadata", {}).get("continue")
            if not cont:
                rv = str(page.get("metadata", {}).get("resourceVersion", ""))
                for item in items:  # list items lack apiVersion/kind
                    item.setdefault("apiVersion", ref.api_version)
                    item.setdefault("kind", ref.kind)
                return items, rv

    async def watch(
        self,
        ref: KindRef,
        resource_version: str,
        *,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        label_selector: str | None = None,
    ) -> AsyncIterator[Obj]:
        """Raw watch events (``{"type", "object"}``), bookmarks included, until the server ends the
        stream. Raises :class:`Gone` on 410."""
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        if label_selector:
            query.append(("labelSelector", label_selector))
        try:
            resp = await self.api.call_api(
                ref.path(namespace),
                "GET",
                query_params=query,
                header_params={"Accept": JSON},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=timeout_seconds + 30,
            )
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(str(exc)) from exc
            raise
        async with resp:
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                event = cast(Obj, json.loads(line))
                if event.get("type") == "ERROR":
                    status = event.get("object", {})
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
        resp = await self.api.call_api(
            f"/api/v1/namespaces/{namespace}/pods/{name}/log",
            "GET",
            query_params=query,
            header_params={"Accept": "text/plain, */*"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
        async with resp:
            data: bytes = await resp.read()
            text = data.decode(resp.charset or "utf-8", errors="replace")
            if not 200 <= resp.status <= 299:
                exc = ApiException(status=resp.status, reason=resp.reason)
                exc.body = text  # type: ignore[assignment]  # str, as the client stores bodies
                exc.headers = resp.headers
                raise exc
        return text

    # -- writes --------------------------------------------------------------------------------

    async def create(self, ref: KindRef, body: Obj, namespace: str | None = None) -> Obj:
        ns = namespace or body.get("metadata", {}).get("namespace")
        return await self._call("POST", ref.path(ns), body=body)

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

    async def delete(self, ref: KindRef, namespace: str | None, name: str) -> bool:
        try:
            await self._call("DELETE", ref.path(namespace, name), body={"propagationPolicy": "Background"})
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
