"""The watcher as a highly available pair, and across an API server restart, on servers of the
test's own: one replica leads (the other stands by, and does not watch or publish), killing the
leader hands over, and the watcher resumes after the API server comes back."""

from __future__ import annotations

import json

from aim_dev.testing.plugin import LocalServers, connect_as
from aim_watcher.election import LEADER_KEY
from aimcore.api.bus import subjects, topology
from aimcore.api.kinds import NAMESPACE, by_kind
from aimcore.runtime import Kube
from aimcore.runtime.kube import connect
from tests.helpers import eventually, manifest
from tests.integration.conftest import Services

MODEL = by_kind("aim.eai.amd.com", "AIMModel")


def model(name: str) -> dict[str, object]:
    return manifest(MODEL, name, "ha", {"image": f"ghcr.io/example/{name}:1"})


async def test_standby_takes_over_and_api_restart_is_survived(private_stack: LocalServers) -> None:
    services = Services(private_stack, private_stack.workdir / "logs")
    services.start("watcher", 0)
    services.start("watcher", 1)
    kube = Kube(await connect(private_stack.kubeconfig), field_manager="aim-tests")
    nc = await connect_as(private_stack.nats)
    try:
        js = nc.jetstream()

        async def leader() -> str | None:
            services.assert_alive()
            try:
                election = await js.key_value(topology.ELECTION_BUCKET)
                entry = await election.get(LEADER_KEY)
            except Exception:
                return None
            return entry.value.decode() if entry.value else None

        holder = await eventually(leader, timeout=60, what="a leader")
        leader_pid = int(holder.rsplit("/", 1)[1])
        by_pid = {p.pid: label for label, p in services.procs.items()}
        assert leader_pid in by_pid, holder
        kv = await topology.objects_bucket(js)

        async def mirrored(name: str) -> bool:
            try:
                entry = await kv.get(subjects.object_key(MODEL, "ha", name))
            except Exception:
                return False
            return bool(entry.value) and json.loads(entry.value)["metadata"]["name"] == name

        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ha"}})
        await kube.create(MODEL, model("before"))
        await eventually(lambda: mirrored("before"), what="the leader to mirror")

        # The lease is what keeps the standby quiet: it never led, so it never listed, watched or
        # published (its log has no term and no watchers); the leader's has exactly one term.
        leader_label = by_pid[leader_pid]
        standby_label = next(label for label in services.procs if label != leader_label)
        leader_log = services.procs[leader_label].log_path.read_text(errors="replace")
        standby_log = services.procs[standby_label].log_path.read_text(errors="replace")
        assert leader_log.count("elected leader") == 1 and "watching" in leader_log, leader_log[-2000:]
        assert "elected leader" not in standby_log and "watching" not in standby_log, standby_log[-2000:]

        # The leader dies without a word; the standby takes over once its key expires.
        dead = by_pid[leader_pid]
        services.kill(dead)
        survivor = next(label for label in services.procs if label != dead)

        async def survivor_leads() -> bool:
            value = await leader()
            return value is not None and value.endswith(f"/{services.procs[survivor].pid}")

        await eventually(survivor_leads, timeout=60, interval=0.2, what="the standby to take over")
        assert "elected leader" in services.procs[survivor].log_path.read_text(errors="replace")
        await kube.create(MODEL, model("after-failover"))
        await eventually(lambda: mirrored("after-failover"), timeout=30, what="the new leader to mirror")

        # The API server restarts; the watcher's watches break, and it resumes by relisting.
        private_stack.control_plane.restart_apiserver()
        await kube.create(MODEL, model("after-api-restart"))
        await eventually(
            lambda: mirrored("after-api-restart"), timeout=60, what="mirroring after the restart"
        )
        assert services.procs[survivor].alive()
    finally:
        await nc.close()
        await kube.close()
        services.stop_all()
