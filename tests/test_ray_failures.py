"""`--ray` when the cluster is not there or fails: one line, in bounded time, what finished kept.

Each test that starts Ray starts its own one-CPU session (`--ray local --workers 1`) with the
fake model, as the machine running the suite may have two cores only.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray_support import ROOT, TESTS
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.runs.units import RayClusterError, RayOptions

FRUIT = str(Path(ROOT) / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
runner = CliRunner()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def test_a_head_address_where_nothing_listens_fails_at_once_naming_it(tmp_path: Path) -> None:
    address = f"127.0.0.1:{closed_port()}"
    start = time.monotonic()
    result = runner.invoke(app, ["solve", FRUIT, "--llm", "fake", "--games", "1", "-q",
                                 "--ray", address, "-o", str(tmp_path / "out")])
    elapsed = time.monotonic() - start
    assert result.exit_code == 2, result.output
    assert f"--ray {address}: no Ray head answers there" in result.output
    assert "Traceback" not in result.output
    assert elapsed < 15


def test_an_unreachable_head_is_given_up_on_within_the_timeout() -> None:
    from gtsteer.runs.ray_pool import probe_head

    start = time.monotonic()
    # TEST-NET-1 (RFC 5737): routed nowhere, so the connect either times out or is refused.
    with pytest.raises(RayClusterError, match=r"--ray 192\.0\.2\.1:6379: no Ray head"):
        probe_head("192.0.2.1:6379", timeout_s=1.0)
    assert time.monotonic() - start < 3.0


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:99999", "the port must be a number from 1 to 65535, got '99999'"),
        ("127.0.0.1:0", "the port must be a number from 1 to 65535, got '0'"),
        ("head:ssh", "the port must be a number from 1 to 65535, got 'ssh'"),
        ("bogus", "give `local`, `auto` or HOST:PORT"),
        (":6379", "give `local`, `auto` or HOST:PORT"),
        ("local; rm -rf /:1", "is not a host name or IP address"),
        ("[nope]:6379", "[nope] is not an IPv6 address"),
    ],
)
def test_a_malformed_head_address_is_refused_before_ray_starts(address: str, message: str) -> None:
    result = runner.invoke(app, ["solve", FRUIT, "--llm", "fake", "--games", "1", "-q",
                                 "--ray", address])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.replace("│", " ").split())  # the box's borders


def test_well_formed_head_addresses_pass() -> None:
    for address in ("10.0.0.5:6379", "head-node.example.org:6379", "[::1]:6379", "auto", "local"):
        RayOptions(address)


#: Run in a child process: when its raylet dies, Ray ends the driver's process (some 15 s
#: later, exit status 1, no word) unless the run noticed first.
RAYLET_DIES = """
from gtsteer.llm import LLM
from gtsteer.runs.executor import run_units
from gtsteer.runs.units import RayClusterError, RayOptions
from ray_support import unit_or_kill_raylet
finished = []
try:
    run_units(unit_or_kill_raylet, [0, 1], LLM("fake"), ray=RayOptions("local", 1),
              on_result=lambda i, value: finished.append(value), label="instances")
except RayClusterError as exc:
    print("finished", finished)
    print("error", exc)
"""


def test_a_raylet_dying_mid_run_is_one_error_and_the_finished_unit_is_kept(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{TESTS}", "GTSTEER_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", RAYLET_DIES], env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    # Ray's own lines (the raylet's log tail) go to stdout too
    lines = [line for line in done.stdout.splitlines() if line.startswith(("finished", "error"))]
    assert done.returncode == 0, done.stderr[-3000:]
    assert lines[0] == "finished [0]"
    assert lines[1] == ("error the Ray cluster failed during the run (the raylet of this"
                        " machine's Ray node died); 1 of 2 instances finished and are kept;"
                        " rerun to do the rest (finished work is read from the cache)")
