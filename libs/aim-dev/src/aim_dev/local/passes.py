"""The loop of the development stand-ins that act on a cluster in passes (the KServe stand-in,
:mod:`aim_dev.kserve`, and the volume provisioner, :mod:`aim_dev.local.provisioner`): connect, run
a pass every ``interval`` seconds, log a pass the API server fails (it may be restarting) and go
on, close the connection when stopped. One loop, so both stand-ins ride out the same failures the
same way; :class:`Together` runs several stand-ins' passes in one process (KServe's and KEDA's)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from aimcore.runtime import ApiException, Kube, describe_error
from aimcore.runtime.kube import connect


class Passes(Protocol):
    """Something that brings the cluster one step closer to what it wants, once per call."""

    async def tick(self) -> None: ...


class Together:
    """Several stand-ins' passes as one (the KServe and KEDA stand-ins share a process): each runs
    in every pass whatever the ones before it did; the first failure is raised once all ran."""

    def __init__(self, *passes: Passes) -> None:
        self.passes = passes

    async def tick(self) -> None:
        failure: ApiException | OSError | TimeoutError | None = None
        for passes in self.passes:
            try:
                await passes.tick()
            except (ApiException, OSError, TimeoutError) as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


async def run_passes(
    kubeconfig: str,
    field_manager: str,
    make: Callable[[Kube], Passes],
    *,
    interval: float,
    log: logging.Logger,
) -> None:
    """Run ``make(kube).tick()`` every ``interval`` seconds until cancelled, with a client of
    ``kubeconfig`` writing as ``field_manager``."""
    kube = Kube(await connect(kubeconfig), field_manager=field_manager)
    passes = make(kube)
    try:
        while True:
            try:
                await passes.tick()
            except (ApiException, OSError, TimeoutError) as exc:  # the API server restarting
                log.warning("pass failed: %s", describe_error(exc))
            await asyncio.sleep(interval)
    finally:
        await kube.close()
