"""kubernetes-asyncio's configuration loading and REST layer, without its generated client.

Why this module exists: importing anything from kubernetes-asyncio runs its package ``__init__``,
which imports ``kubernetes_asyncio.client`` and with it every generated API and model (about 850
modules: ~100 MB of RSS and most of a service's start-up time). The operator uses none of them: it
speaks JSON to the API server by path (:mod:`aimcore.runtime.kube`). What it does use is
kubernetes-asyncio's kubeconfig and in-cluster loading (contexts, client certificates, exec and
OIDC token providers, token refresh) and its small aiohttp REST client, which live in modules that
need nothing generated.

So those modules are imported under a placeholder for the two package ``__init__``s, and the
placeholders are removed again: the modules loaded stay shared, and a later ``import
kubernetes_asyncio.client`` (a tool that wants the generated client) runs the real package and
reuses them, so its ``ApiException`` and ``Configuration`` are the classes used here.

:class:`Transport` is the part of ``ApiClient`` the operator needs: the configured host, the
bearer token (refreshed through the configuration's hook, as the generated client does), JSON
bodies in, raw bytes out.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

import aiohttp

_LIGHT = (
    "kubernetes_asyncio.client.exceptions",
    "kubernetes_asyncio.client.configuration",
    "kubernetes_asyncio.client.rest",
    "kubernetes_asyncio.config",
)


def _load_light() -> dict[str, types.ModuleType]:
    """kubernetes-asyncio's config and REST modules, imported without its generated client.

    They are taken from ``sys.modules`` afterwards, never imported by name again here: an
    ``import kubernetes_asyncio.config`` once the placeholders are gone would run the real package
    ``__init__`` (and load the generated client after all)."""
    if "kubernetes_asyncio.client" not in sys.modules:  # else the whole client is loaded already
        spec = importlib.util.find_spec("kubernetes_asyncio")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("kubernetes_asyncio is not installed")
        (root_dir,) = list(spec.submodule_search_locations)
        root = types.ModuleType("kubernetes_asyncio")
        root.__path__ = [root_dir]
        client = types.ModuleType("kubernetes_asyncio.client")
        client.__path__ = [f"{root_dir}/client"]
        placeholders = {"kubernetes_asyncio": root, "kubernetes_asyncio.client": client}
        sys.modules.update(placeholders)
        try:
            configuration = importlib.import_module("kubernetes_asyncio.client.configuration")
            # what kube_config imports from the package (its ApiClient only for helpers the
            # operator never calls: the generated client, loaded on first use)
            client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
            client.ApiClient = _generated_api_client  # type: ignore[attr-defined]
            for name in _LIGHT:
                importlib.import_module(name)
        finally:
            for name, module in placeholders.items():
                if sys.modules.get(name) is module:
                    del sys.modules[name]
    return {name: sys.modules[name] for name in _LIGHT}


def _generated_api_client(*args: Any, **kwargs: Any) -> Any:
    api_client = importlib.import_module("kubernetes_asyncio.client.api_client")
    return api_client.ApiClient(*args, **kwargs)


if TYPE_CHECKING:
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client.configuration import Configuration
    from kubernetes_asyncio.client.exceptions import ApiException
    from kubernetes_asyncio.client.rest import RESTClientObject
else:
    _modules = _load_light()
    config = _modules["kubernetes_asyncio.config"]
    Configuration = _modules["kubernetes_asyncio.client.configuration"].Configuration
    ApiException = _modules["kubernetes_asyncio.client.exceptions"].ApiException
    RESTClientObject = _modules["kubernetes_asyncio.client.rest"].RESTClientObject

__all__ = ["ApiException", "Configuration", "Transport", "config"]


class Transport:
    """Requests to the configured API server with its credentials; the one connection pool."""

    def __init__(self, configuration: Configuration, *, user_agent: str = "aim-engine-py") -> None:
        self.configuration = configuration
        self.rest = RESTClientObject(configuration)
        self.user_agent = user_agent

    @property
    def session(self) -> aiohttp.ClientSession:
        session: aiohttp.ClientSession = self.rest.pool_manager
        return session

    @session.setter
    def session(self, value: aiohttp.ClientSession) -> None:
        self.rest.pool_manager = value

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        headers: dict[str, str],
        body: Any = None,
        timeout: float | None = None,
        preload: bool = True,
    ) -> Any:
        """The response: read whole (``.status``, ``.data`` bytes; :class:`ApiException` unless
        2xx) with ``preload``, else aiohttp's streaming response, its status for the caller to
        check."""
        sent = {"User-Agent": self.user_agent, **headers}
        auth = (await self.configuration.auth_settings()).get("BearerToken")
        if auth:
            sent[auth["key"]] = auth["value"]
        try:
            return await self.rest.request(
                method,
                f"{self.configuration.host}{path}",
                query_params=query or [],  # type: ignore[arg-type]  # a list of pairs is fine (urlencode)
                headers=sent,
                body=body,
                _preload_content=preload,
                _request_timeout=timeout,
            )
        except ApiException as exc:
            if isinstance(exc.body, bytes):  # as the generated client leaves it: text
                exc.body = exc.body.decode("utf-8", errors="replace")  # type: ignore[assignment]
            raise

    async def close(self) -> None:
        await self.rest.close()
