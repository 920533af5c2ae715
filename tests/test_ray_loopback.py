"""`--ray local` listens on loopback only: every TCP socket its processes open for listening
(GCS, raylet, object manager, workers, the cache actor, agents) is bound to 127.0.0.1, so no
other machine can reach the session (docs/SCALE.md). Linux only: read from /proc."""

from __future__ import annotations

import ipaddress
import os
import sys

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
