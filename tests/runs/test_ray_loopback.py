"""`--ray local` listens on loopback only: every TCP socket its processes open for listening
(GCS, raylet, object manager, workers, the cache actor, agents) is bound to 127.0.0.1, so no
other machine can reach the session (docs/SCALE.md). Linux only: read from /proc."""

from __future__ import annotations

import ipaddress
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from ray_support import listening_sockets

from gtsteer.llm import LLM
from gtsteer.runs.executor import run_units
from gtsteer.runs.units import RayOptions

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/net/tcp")


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def test_a_local_session_listens_on_loopback_only() -> None:
    seen: list[tuple[str, str, int]] = []
    # Read while the session runs: its worker and the cache actor exist once a unit finished.
    run_units(lambda unit, model: model.generate_sync(f"unit {unit}").text, [0], LLM("fake"),
              ray=RayOptions("local", 1),
              on_result=lambda i, value: seen.extend(listening_sockets(os.getpid())))
    names = {name for name, _, _ in seen}
    assert {"gcs_server", "raylet"} <= names, seen  # the scan found the session's processes
    assert any(name.startswith("ray::") for name in names), seen  # and its workers
    exposed = sorted({(name, address) for name, address, _ in seen if not _loopback(address)})
    assert exposed == []


@pytest.mark.parametrize("found_by", ["address file", "RAY_ADDRESS"])
def test_ray_local_starts_its_own_session_where_another_cluster_is_advertised(
        found_by: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ray start` (and Ray's test clusters) write their address to <ray temp>/ray_current_cluster,
    which a bare `ray.init()` joins: `--ray local` must start its own session anyway (joining
    with `num_cpus` is refused, and would run on someone else's cluster)."""
    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths sit in it
    try:
        monkeypatch.setenv("RAY_TMPDIR", ray_temp)
        nobody = "127.0.0.1:9"  # discard port: nothing to join there
        if found_by == "RAY_ADDRESS":
            monkeypatch.setenv("RAY_ADDRESS", nobody)
        else:
            Path(ray_temp, "ray", "ray_current_cluster").parent.mkdir()
            Path(ray_temp, "ray", "ray_current_cluster").write_text(nobody)
        done = run_units(lambda unit, model: unit * 10, [0, 1], LLM("fake"),
                         ray=RayOptions("local", 1))
        assert done.values == [0, 10]
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
