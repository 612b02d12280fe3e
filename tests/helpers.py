"""Helpers shared by the tests: waiting on conditions, and kubectl as a user would run it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from aimcore.kinds import KindRef
from aimcore.local.binaries import run_kubectl

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]], timeout: float = 20.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    last: T | None = None
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
