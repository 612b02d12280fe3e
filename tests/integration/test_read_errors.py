"""The operator's reads of the API server outlast its 500s (issue 44: a 1.2 MB AIMModel's read
answered ``500 rpc error: code = Internal desc = unexpected EOF`` under the full suite's load).

The status service and the watcher run as processes behind a real proxy in front of the real API
server (:mod:`tests.api_fault_proxy`) that answers their reads with exactly that error, more times
in a row than the client's own attempts (:data:`~aimcore.runtime.kube.READ_ATTEMPTS`): the status
service's read fails its first attempt at the report, which is retried with backoff (a nak) and
lands; the watcher's list fails, and it lists again with backoff and mirrors the object. The test
waits for the status through a proxy of its own that fails its reads too."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from aim_dev.testing.plugin import LocalServers, connect_as
from aimcore.api.bus import subjects, topology
from aimcore.api.bus.messages import ConditionReport
from aimcore.api.kinds import by_kind
from aimcore.runtime import Reporter
from aimcore.runtime.kube import READ_ATTEMPTS
from tests.api_fault_proxy import ETCD_UNEXPECTED_EOF, FaultProxy
from tests.helpers import eventually, has, kube_at, manifest, status_of
from tests.integration.conftest import Services

TEMPLATE_CACHE = by_kind("aim.eai.amd.com", "AIMTemplateCache")
NAMESPACE = by_kind("", "Namespace")


async def test_the_status_service_and_the_watcher_read_through_server_errors(
    private_stack: LocalServers, tmp_path: Path
) -> None:
    cluster = private_stack.control_plane
    async with contextlib.AsyncExitStack() as stack:
        kube = await stack.enter_async_context(kube_at(private_stack.kubeconfig))
        nc = await connect_as(private_stack.nats)
        stack.push_async_callback(nc.close)
        for_services = await stack.enter_async_context(FaultProxy(cluster, tmp_path / "services-proxy"))
        for_test = await stack.enter_async_context(FaultProxy(cluster, tmp_path / "test-proxy"))
        through_proxy = await stack.enter_async_context(kube_at(for_test.kubeconfig))
        services = Services(private_stack, tmp_path / "logs", env={"AIM_KUBECONFIG": for_services.kubeconfig})
        stack.callback(services.stop_all)
        js = nc.jetstream()
        # no watcher yet: the status service finds nothing in the mirror and reads the object from
        # the API server (as it does when the mirror lags, after a conflict, or to confirm a no-op)
        await topology.ensure_topology(js)
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "r"}})
        body = manifest(TEMPLATE_CACHE, "c", "r", {"templateName": "llama-mi300x"})
        cache = await kube.create(TEMPLATE_CACHE, body)
        path = TEMPLATE_CACHE.path("r", "c")
        refused = READ_ATTEMPTS + 2  # the first attempt's reads all fail, and two of the retry's
        for_services.fail("GET", path, times=refused)
        for_test.fail("GET", path, times=2 * READ_ATTEMPTS)
        services.start("status")

        found = ConditionReport(
            type="ServiceTemplateReady", status="False", reason="ReferenceNotFound", message="nope"
        )
        assert await Reporter(js, "cache").report(TEMPLATE_CACHE, cache, [found])
        reported = has("ServiceTemplateReady", "False", "ReferenceNotFound")
        obj = await status_of(through_proxy, TEMPLATE_CACHE, "r", "c", reported, "the status")
        assert obj["status"]["conditions"]
        assert for_services.seen("GET", path, 500) == refused  # it read through every one
        assert for_test.seen("GET", path, 500) == 2 * READ_ATTEMPTS
        log = (tmp_path / "logs" / "status.log").read_text()
        assert ETCD_UNEXPECTED_EOF in log and "attempt 1 on" in log, log[-3000:]  # retried as a whole

        # The watcher's list of the kind fails more times than a read's attempts: it lists again
        # (with backoff) and mirrors the object
        listing = TEMPLATE_CACHE.path(None)
        for_services.fail("GET", listing, times=READ_ATTEMPTS + 1)
        services.start("watcher")
        kv = await topology.objects_bucket(js)
        key = subjects.object_key(TEMPLATE_CACHE, "r", "c")

        async def mirrored() -> bool:
            try:
                entry = await kv.get(key)
            except Exception:
                return False
            return entry.value is not None and json.loads(entry.value)["metadata"]["name"] == "c"

        await eventually(mirrored, timeout=60, what="the watcher to mirror the object")
        assert for_services.seen("GET", listing, 500) == READ_ATTEMPTS + 1
        assert for_services.seen("GET", listing, 200) >= 1
        watcher_log = (tmp_path / "logs" / "watcher.log").read_text()
        assert "relisting in" in watcher_log, watcher_log[-3000:]
        services.assert_alive()
