"""The benchmarks' API server profile (``--profile``): a control plane started with profiling serves
Go's CPU profile, which the bench fetches over a burst; one started without it yields a line saying
there is no profile, not a failed benchmark. Real API servers."""

from __future__ import annotations

import gzip
from pathlib import Path

from aim_dev.bench.profile import ApiServerProfiler
from aim_dev.local.cluster import ControlPlane


def test_the_api_server_profile_is_fetched_from_a_stack_that_serves_it(
    tmp_path: Path, aim_cluster: ControlPlane
) -> None:
    profiled = ControlPlane(tmp_path / "cluster", profiling=True).start()
    try:
        profiler = ApiServerProfiler(profiled, tmp_path / "on", seconds=1)
        profiler.start()
        line = profiler.stop()
    finally:
        profiled.stop()
    data = (tmp_path / "on" / ApiServerProfiler.FILE).read_bytes()
    assert data[:2] == b"\x1f\x8b", "pprof's profiles are gzipped protobuf"
    assert b"kube-apiserver" in gzip.decompress(data), "the profile maps the API server's binary"
    assert "Go CPU profile of the burst's first 1 s" in line

    # the tests' shared control plane is started without profiling: no profile, and a line saying why
    off = ApiServerProfiler(aim_cluster, tmp_path / "off", seconds=1)
    off.start()
    assert off.stop().startswith("kube-apiserver: no profile (HTTP Error 404")
    assert not (tmp_path / "off" / ApiServerProfiler.FILE).exists()
