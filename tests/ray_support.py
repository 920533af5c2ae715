"""Real Ray sessions for the Ray tests, on this machine only (127.0.0.1), always shut down.

Not a test module. Workers inherit the driver's environment, so putting tests/ and its test
folders on PYTHONPATH lets them import the test helpers and test modules (the test domains
register their utilities on import).
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TESTS = str(Path(__file__).parent)
ROOT = str(Path(__file__).parent.parent)
#: The test folders (tests/<package>/): a Ray task's function may live in a test module, which
#: a worker imports by its bare name, as pytest put its folder on the driver's sys.path.
TEST_FOLDERS = [str(p) for p in sorted(Path(TESTS).iterdir())
                if p.is_dir() and p.name.isidentifier() and p.name not in ("data", "golden")]


#: Off, Ray's node-address lookup answers 127.0.0.1 instead of this machine's interface
#: address (`ray._private.services.get_node_ip_address`), which joining a cluster by
#: "127.0.0.1:PORT" would otherwise be rewritten to.
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextmanager
def _environment() -> Iterator[None]:
    from ray._private import ray_constants

    old = {k: os.environ.get(k) for k in ("PYTHONPATH", LOOPBACK_ONLY)}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (ROOT, TESTS, *TEST_FOLDERS, old["PYTHONPATH"]) if p)
    os.environ[LOOPBACK_ONLY] = "0"
    cluster_mode, ray_constants.ENABLE_RAY_CLUSTER = ray_constants.ENABLE_RAY_CLUSTER, False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def one_node(cpus: int = 2) -> Iterator[None]:
    """A `--ray local` session with `cpus` CPUs (no dashboard, loopback only), started and
    shut down by gtsteer's own `connected`."""
    from gtsteer.runs.ray_pool import RayOptions, connected  # imports Ray

    with _environment(), connected(RayOptions("local", cpus)):
        yield


@contextmanager
def two_nodes(worker_cpus: int = 2) -> Iterator[tuple[str, str]]:
    """A head node with no CPU (the driver and its actors live there) and one worker node
    with `worker_cpus`: every task runs on a node other than the driver's. Yields the node
    ids (head, worker)."""
    import ray
    from ray.cluster_utils import Cluster

    with _environment():
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False})
        try:
            worker = cluster.add_node(num_cpus=worker_cpus, node_ip_address="127.0.0.1")
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, _node_ip_address="127.0.0.1",
                     logging_level="WARNING")
            try:
                head = ray.get_runtime_context().get_node_id()
                yield head, worker.node_id
            finally:
                ray.shutdown()
        finally:
            cluster.shutdown()


@contextmanager
def loopback_head(cpus: int = 1) -> Iterator[str]:
    """A Ray head on this machine listening on 127.0.0.1 only, as `ray start --head
    --node-ip-address 127.0.0.1` with Ray's node-address lookup off starts one; this process
    is not connected to it. Yields its GCS address, `127.0.0.1:PORT`."""
    from ray.cluster_utils import Cluster

    with _environment():
        cluster = Cluster(initialize_head=True, connect=False, head_node_args={
            "num_cpus": cpus, "node_ip_address": "127.0.0.1", "include_dashboard": False})
    try:
        yield cluster.address
    finally:
        cluster.shutdown()


def timed_unit(unit: tuple[str, int], model: Any) -> int:
    """A unit of work for the Ray tests that writes when it ran to `<folder>/<i>.json`. Its
    model calls look the cache up through the driver's cache actor (a blocking `ray.get` in
    the task), the moment Ray lends a blocked task's CPU to another task."""
    folder, i = unit
    start = time.time()
    model.generate_sync(f"unit {i}, first call")
    time.sleep(1.0)
    model.generate_sync(f"unit {i}, second call")
    Path(folder, f"{i}.json").write_text(json.dumps([start, time.time()]))
    return i


def most_at_once(folder: Path) -> int:
    """The largest number of `timed_unit` intervals in `folder` that overlap."""
    events = []
    for path in folder.glob("*.json"):
        start, end = json.loads(path.read_text())
        events += [(start, 1), (end, -1)]
    running = peak = 0
    for _, step in sorted(events):  # an end sorts before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


def unit_or_kill_raylet(unit: int, model: Any) -> int:
    """Unit 0 finishes; unit 1 kills the raylet that started its worker process (its parent),
    as a node dying under a run does."""
    import signal

    model.generate_sync(f"unit {unit}")
    if unit == 1:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # the worker goes down with its raylet long before this ends
    return unit


def _descendants(root_pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _listening_by_inode() -> dict[str, tuple[str, int]]:
    """Socket inode -> (address, port) of every listening TCP socket (Linux /proc/net)."""
    out = {}
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cols = row.split()
            if cols[3] != "0A":  # TCP_LISTEN
                continue
            hex_ip, hex_port = cols[1].split(":")
            raw = bytes.fromhex(hex_ip)
            # /proc/net stores each 32-bit word in host (little-endian) order
            ip = b"".join(raw[i:i + 4][::-1] for i in range(0, width // 2, 4))
            out[cols[9]] = (str(ipaddress.ip_address(ip)), int(hex_port, 16))
    return out


def listening_sockets(root_pid: int) -> list[tuple[str, str, int]]:
    """`(process name, address, port)` of every listening TCP socket of `root_pid` and its
    descendants (a `--ray local` session: the driver, GCS, raylet, workers, actors)."""
    sockets = _listening_by_inode()
    found = []
    for pid in _descendants(root_pid):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        for link in links:
            inode = link[len("socket:["):-1] if link.startswith("socket:[") else None
            if inode in sockets:
                found.append((name, *sockets[inode]))
    return found
