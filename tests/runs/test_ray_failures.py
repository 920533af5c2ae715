"""`--ray` when the cluster is not there or fails: one line, in bounded time, what finished kept.

Each test that starts Ray starts its own one-CPU session (`--ray local --workers 1`) with the
fake model, as the machine running the suite may have two cores only.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


# ---- a port that accepts TCP but is no Ray head (review 0832c41 M1) -----------------------


def gtsteer_cli(args: list[str], tmp_path: Path, timeout: float,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command line in a child process, as a user runs it (a hang fails the test)."""
    env = {**(os.environ if env is None else env), "PYTHONPATH": f"{ROOT}:{TESTS}",
           "GTSTEER_CACHE_DIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "gtsteer", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def listening_sink() -> socket.socket:
    """A port that accepts connections (the kernel completes them into the backlog) and never
    says a word: what the TCP probe cannot tell from a Ray head."""
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(64)
    return sink


def test_a_port_that_accepts_tcp_but_is_no_ray_head_is_one_line_in_bounded_time(
        tmp_path: Path) -> None:
    with listening_sink() as sink:
        address = f"127.0.0.1:{sink.getsockname()[1]}"
        start = time.monotonic()
        done = gtsteer_cli(["solve", FRUIT, "--llm", "fake", "--games", "1", "-q", "--ray",
                            address, "-o", str(tmp_path / "out")], tmp_path, timeout=80)
        elapsed = time.monotonic() - start
    from gtsteer.runs.ray_pool import GCS_TIMEOUT_S

    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: RayClusterError: --ray {address}: the port accepts connections, but no Ray"
        f" head answers there (no answer to Ray's handshake within {GCS_TIMEOUT_S:g} s); give"
        " the GCS port `ray start --head` printed (6379 by default)"]
    assert "Traceback" not in done.stderr and "Failed to connect" not in done.stderr  # Ray's
    assert elapsed < GCS_TIMEOUT_S + 20


#: Run in a child process: the GCS handshake is skipped (as if a GCS answered and then went
#: quiet), so `ray.init` itself waits on the sink at ARGV[1]; ARGV[2] bounds the join.
JOIN_HANGS = """
import sys
from gtsteer.runs import ray_pool
from gtsteer.runs.units import RayClusterError, RayOptions
ray_pool.probe_gcs = lambda address: None
ray_pool.JOIN_TIMEOUT_S = float(sys.argv[2])
print("joining", flush=True)
try:
    with ray_pool.connected(RayOptions(sys.argv[1])):
        print("joined", flush=True)
except RayClusterError as exc:
    print("error", exc, flush=True)
"""


@contextmanager
def join_hanging(address: str, deadline_s: float) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{TESTS}"}
    # Ctrl-C as at a terminal (a child of a non-interactive shell may inherit it ignored)
    child = subprocess.Popen([sys.executable, "-c", JOIN_HANGS, address, str(deadline_s)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        yield child
    finally:
        if child.poll() is None:  # it hung: the test failed, the child must not outlive it
            child.kill()
            child.communicate()


def test_a_join_that_hangs_inside_ray_init_is_given_up_on_at_its_deadline() -> None:
    with listening_sink() as sink, join_hanging(f"127.0.0.1:{sink.getsockname()[1]}",
                                                8.0) as child:
        address = f"127.0.0.1:{sink.getsockname()[1]}"
        start = time.monotonic()
        out, err = child.communicate(timeout=60)
        elapsed = time.monotonic() - start
    assert child.returncode == 0, err[-3000:]
    assert out.splitlines() == ["joining", f"error --ray {address}: Ray did not finish joining"
                                " the cluster within 8 s"]
    assert 8 <= elapsed < 30


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 1), (signal.SIGTERM, 15)])
def test_ctrl_c_and_sigterm_stop_a_join_inside_ray_init(sent: int, status: int) -> None:
    with listening_sink() as sink, join_hanging(f"127.0.0.1:{sink.getsockname()[1]}",
                                                300.0) as child:
        assert child.stdout is not None and child.stdout.readline() == "joining\n"
        time.sleep(6)  # well inside ray.init: past its first 5 s connect attempt
        assert child.poll() is None
        child.send_signal(sent)
        start = time.monotonic()
        _, err = child.communicate(timeout=20)
    assert time.monotonic() - start < 5
    assert child.returncode == status, err[-3000:]
    if sent == signal.SIGINT:
        assert "KeyboardInterrupt" in err


def test_a_head_listening_on_loopback_only_is_joined_there(tmp_path: Path) -> None:
    from ray_support import loopback_head

    with loopback_head(cpus=1) as address:
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1"
        # The CLI's own environment: Ray's node-address lookup on, as for any user, which
        # would rewrite 127.0.0.1 to this machine's interface address.
        env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
        done = gtsteer_cli(["solve", FRUIT, "--llm", "fake", "--games", "1", "-q",
                            "--iterations", "10", "--ray", address, "-o", str(tmp_path / "out")],
                           tmp_path, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "out" / "games" / "0.json").exists()
    assert "SIGTERM handler" not in done.stderr and "Traceback" not in done.stderr
