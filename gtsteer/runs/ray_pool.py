"""Units of work as Ray tasks (`--ray ADDRESS`); see docs/SCALE.md.

What travels where:
- driver -> task: the unit, the per-unit function (by reference: gtsteer is installed on every
  node) and a `ModelSpec` (model string, api base, key), never a loaded model;
- task -> driver: the unit's result, the cache entries the task created, its usage counters;
- cache lookups: a `CacheReader` actor on the driver's node reads the driver's cache, so a
  worker on another node sees every answer the driver has, without a shared disk.

The driver is the only writer of the cache, and writes a task's entries only once the task has
finished: a worker killed mid-task leaves no entry behind, and Ray's retry of that task asks
the model again (or hits what finished tasks stored). Each worker process builds its backend
once per model (a local GGUF is loaded once and reused across its tasks, with as many threads
as CPUs Ray gave the task); requests of a served model pass one `RateLimiter` actor, so the
cluster together keeps the limit one process would.
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from gtsteer.binding import progress as shown
from gtsteer.llm import LLM, ResponseCache
from gtsteer.llm.backends import Backend, builds, in_process, make_backend
from gtsteer.llm.rate import RateLimit, RequestGate
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage
from gtsteer.llm.usage import LLMCalls, UsageMeter, UsageReport
from gtsteer.runs.units import RayClusterError, RayOptions, UnitsRun, head_address

U = TypeVar("U")
R = TypeVar("R")

#: Tries of a task whose worker process died (Ray re-runs it elsewhere); an exception raised
#: by the task itself is never retried: that unit's failure is the run's, as serially.
TASK_RETRIES = 3
#: How long `--ray HOST:PORT` waits for the head's port to accept a connection (Ray's own
#: connect retries for some 14 minutes, printing a line every 30 s, deaf to Ctrl-C).
CONNECT_TIMEOUT_S = 10.0
#: How long the head's GCS may take to answer Ray's own handshake (a port that accepts TCP
#: may be no Ray head at all), Python's start and Ray's import in a child process included.
GCS_TIMEOUT_S = 20.0
#: How long joining a cluster may take in all: above the 60 s Ray gives itself to find this
#: machine's raylet (`ray start` must have run here), so its own message comes first.
JOIN_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class ModelSpec:
    """How a worker builds the driver's model: the model string and the client's settings, or
    (a backend that no model string names, e.g. a test double) the backend object itself."""

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)  # travels inside the cluster only
    timeout_s: float = 120.0
    max_retries: int = 4
    structured_attempts: int = 3
    max_wait_s: float = 300.0
    backend: Backend | None = None

    @classmethod
    def of(cls, llm: LLM) -> ModelSpec:
        b = llm.backend
        settings = cls(llm.model, timeout_s=llm.timeout_s, max_retries=llm.max_retries,
                       structured_attempts=llm.structured_attempts, max_wait_s=llm.max_wait_s)
        if not builds(llm.model, b):
            return replace(settings, backend=b)
        return replace(settings, api_base=getattr(b, "api_base", None),
                       api_key=getattr(b, "_api_key", None))


# ---- actors (on the driver's node) --------------------------------------------------------


class CacheReader:
    """Serves lookups in the driver's response cache to workers on any node."""

    def __init__(self, directory: str):
        self.cache = ResponseCache(directory)

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)


class RateLimiter:
    """The run's `RequestGate` (`gtsteer.llm.rate`, the serial run's too) as one actor that
    every worker asks: at most `max_in_flight` requests at once and `per_minute` started per
    minute, evenly spaced. A slot whose holder died is taken back after `lease_s` (a killed
    worker cannot release it)."""

    def __init__(self, max_in_flight: int, per_minute: int | None, lease_s: float):
        self.gate = RequestGate(RateLimit(max_in_flight, per_minute), lease_s)

    async def acquire_waited(self) -> tuple[int, float]:
        """A slot's token and the seconds it waited for its turn under `per_minute`."""
        return await self.gate.acquire()

    def release(self, token: int) -> None:
        self.gate.release(token)

    def counts(self) -> tuple[int, int]:
        """(slots held now, requests started in the last minute)."""
        return self.gate.counts()


# ---- worker side ------------------------------------------------------------------------


class TravelCache:
    """The cache a task's LLM sees: the driver's answers through `CacheReader`, its own new
    answers kept here and returned with the task's result (the driver stores them)."""

    def __init__(self, reader: Any | None):
        self.reader = reader
        self.new: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        if key in self.new:
            return self.new[key]
        return None if self.reader is None else ray.get(self.reader.get.remote(key))

    def set(self, key: str, value: dict[str, Any]) -> None:
        self.new[key] = value


class GatedBackend(Backend):
    """A served backend whose every request first takes a slot of the shared `RateLimiter`."""

    def __init__(self, inner: Backend, limiter: Any):
        super().__init__(inner.model)
        self.inner, self.limiter = inner, limiter
        #: The task client's meter, told of each wait for the per-minute turn.
        self.meter: UsageMeter | None = None
        self.kind, self.max_concurrency = inner.kind, inner.max_concurrency
        self.supports_grammar, self.cancellable = inner.supports_grammar, inner.cancellable

    def __getattr__(self, name: str) -> Any:  # provider details (modes, api_base, ...)
        return getattr(self.inner, name)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def prepare(self) -> None:
        self.inner.prepare()

    def capabilities(self) -> dict[str, str | None]:
        return self.inner.capabilities()

    def context_window(self) -> int | None:
        return self.inner.context_window()

    def count_tokens(self, request: GenerationRequest) -> int | None:
        return self.inner.count_tokens(request)

    async def _acquire(self) -> int:
        token, waited = await self.limiter.acquire_waited.remote()
        if waited and self.meter is not None:
            self.meter.rate_wait(waited)
        return int(token)

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        token = await self._acquire()
        try:
            return await self.inner.complete(request, json_schema)
        finally:
            await self.limiter.release.remote(token)

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        token = await self._acquire()
        try:
            return await self.inner.score_options_with_usage(request, options)
        finally:
            await self.limiter.release.remote(token)


#: This worker process's backends, one per model: a local GGUF is loaded once per process.
_backends: dict[tuple[str, str | None, int], Backend] = {}


def worker_backend(spec: ModelSpec) -> Backend:
    """The backend of `spec` in this worker process, built on first use; a local model gets as
    many threads as CPUs Ray assigned to the task."""
    if spec.backend is not None:
        return spec.backend
    cpus = int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1) or 1)
    key = (spec.model, spec.api_base, cpus)
    if key not in _backends:
        _backends[key] = make_backend(spec.model, api_base=spec.api_base,
                                      timeout_s=spec.timeout_s, api_key=spec.api_key,
                                      threads=max(1, cpus))
    return _backends[key]


@dataclass
class TaskResult:
    value: Any
    entries: dict[str, dict[str, Any]]
    usage: UsageReport
    capabilities: dict[str, str | None]
    node: str


@ray.remote(max_retries=TASK_RETRIES, retry_exceptions=False)
def _run_unit(work: Callable[[Any, LLM], Any], unit: Any, spec: ModelSpec, use_cache: bool,
              reader: Any | None, limiter: Any | None, imports: tuple[str, ...]) -> TaskResult:
    for module in imports:
        importlib.import_module(module)
    cache = TravelCache(reader)
    backend = worker_backend(spec)
    if limiter is not None:
        backend = GatedBackend(backend, limiter)
    model = LLM(spec.model, backend=backend, cache=cache, use_cache=use_cache,
                timeout_s=spec.timeout_s, max_retries=spec.max_retries,
                structured_attempts=spec.structured_attempts, max_wait_s=spec.max_wait_s)
    if isinstance(backend, GatedBackend):
        backend.meter = model.meter
    value = work(unit, model)
    return TaskResult(value, cache.new, model.usage, model.capabilities(),
                      ray.get_runtime_context().get_node_id())


# ---- driver side ------------------------------------------------------------------------


@contextmanager
def connected(options: RayOptions) -> Iterator[None]:
    """Ray for one run: reuse a session already started in this process (a test, a script
    running several configs), else start one (`local`, loopback only) or join a cluster, and
    leave it afterwards."""
    if ray.is_initialized():
        yield
        return
    if options.address == "local":
        with loopback_only():
            # address="local": a new session even where `ray start` (or RAY_ADDRESS)
            # advertises a cluster, which a bare ray.init() would join
            ray.init(address="local", num_cpus=options.workers or os.cpu_count() or 1,
                     include_dashboard=False, _node_ip_address="127.0.0.1",
                     logging_level=logging.WARNING)
    else:
        if threading.current_thread() is threading.main_thread():
            # What ray.init installs when it runs on the main thread (`join` runs it on
            # another): SIGTERM ends the run through its `finally` blocks, a probe's child too.
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
        if options.address != "auto":
            probe_head(options.address)
            probe_gcs(options.address)
        join(options.address, JOIN_TIMEOUT_S)
    try:
        yield
    finally:
        ray.shutdown()


def join(address: str, timeout_s: float = JOIN_TIMEOUT_S) -> None:
    """`ray.init(address)`, given up on after `timeout_s` with one line. Ray's connect blocks in
    C++ where no signal reaches Python, so it runs on a thread while this one waits, and Ctrl-C
    and SIGTERM stop the process as they would any run. A loopback head (`127.0.0.1:PORT`,
    `localhost:PORT`) is joined there: Ray would rewrite it to this machine's interface address,
    where a head listening on loopback only is not found."""
    failure: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(address=address, logging_level=logging.WARNING)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            failure.append(exc)

    joining = threading.Thread(target=init, name=f"ray.init({address})", daemon=True)
    keep_loopback = address != "auto" and _is_loopback(head_address(address)[0])
    with loopback_only() if keep_loopback else contextlib.nullcontext(), _no_thread_warning():
        joining.start()
        joining.join(timeout_s)  # a lock wait: Ctrl-C interrupts it
    if joining.is_alive():  # left behind as a daemon thread: it ends with the process
        raise RayClusterError(f"--ray {address}: Ray did not finish joining the cluster within"
                              f" {timeout_s:g} s")
    if failure:  # `auto` with no cluster here, a head that went away, no raylet on this node
        raise RayClusterError(f"--ray {address}: cannot join the Ray cluster:"
                              f" {_first_line(failure[0])}") from None


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    sys.exit(signum)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


@contextmanager
def _no_thread_warning() -> Iterator[None]:
    """Without ray.init's warning that it set no SIGTERM handler off the main thread
    (`connected` set one)."""
    worker_log = logging.getLogger("ray._private.worker")

    def quiet(record: logging.LogRecord) -> bool:
        return "not the main thread" not in record.getMessage()

    worker_log.addFilter(quiet)
    try:
        yield
    finally:
        worker_log.removeFilter(quiet)


#: Ray's switch for its node-address lookup (named for Windows and macOS, where it is off by
#: default); off, `_node_ip_address="127.0.0.1"` is kept as given instead of being replaced by
#: this machine's interface address, and Ray's servers bind to the node address.
_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextmanager
def loopback_only() -> Iterator[None]:
    """While a `--ray local` session starts: its node address is 127.0.0.1, so GCS, raylet,
    object manager, workers and agents listen on loopback only, not on every interface.
    The session's processes inherit the setting from the environment; the driver's own copy
    (read when Ray was imported) is switched for the start and put back after."""
    from ray._private import ray_constants

    before_env, before = os.environ.get(_CLUSTER_SWITCH), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_CLUSTER_SWITCH] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        if before_env is None:
            os.environ.pop(_CLUSTER_SWITCH, None)
        else:
            os.environ[_CLUSTER_SWITCH] = before_env


def probe_head(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Fail in `timeout_s` with one line when nothing accepts connections at the head's
    address, before `ray.init` (which would wait forever)."""
    host, port = head_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        why = (f"no answer within {timeout_s:g} s" if isinstance(exc, TimeoutError)
               else (exc.strerror or str(exc)).lower())
        raise RayClusterError(
            f"--ray {address}: no Ray head answers there ({why}); start one with `ray start"
            " --head --port PORT`, or check the address and the firewall") from None


#: Run in a child process, so that Ray's C++ client, its retries and its log lines stay there
#: and the wait can be cut short: it exits 0 once the GCS gave its cluster id.
_GCS_HANDSHAKE = "import sys; from ray._raylet import GcsClient; GcsClient(address=sys.argv[1])"


def probe_gcs(address: str, timeout_s: float = GCS_TIMEOUT_S) -> None:
    """Fail in `timeout_s` with one line when what accepts connections at the head's address
    is not a Ray GCS (Ray's own client would wait some 14 minutes for it)."""
    # Ray's own limit too, so that a child whose parent was killed does not wait 40 s
    env = {**os.environ, "RAY_py_gcs_connect_timeout_s": str(max(1, int(timeout_s)))}
    try:
        done = subprocess.run([sys.executable, "-c", _GCS_HANDSHAKE, address], env=env,
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:  # run() has killed the child
        why = f"no answer to Ray's handshake within {timeout_s:g} s"
    else:
        if done.returncode == 0:
            return
        why = next((line for line in reversed(done.stderr.splitlines()) if line.strip()),
                   f"exit status {done.returncode}")
    raise RayClusterError(
        f"--ray {address}: the port accepts connections, but no Ray head answers there ({why});"
        " give the GCS port `ray start --head` printed (6379 by default)")


def _cluster_failed(what: str, finished: int, total: int, label: str) -> RayClusterError:
    return RayClusterError(
        f"the Ray cluster failed during the run ({what}); {finished} of {total} {label}"
        " finished and are kept; rerun to do the rest (finished work is read from the cache)")


def _local_raylet_watch() -> Callable[[], bool]:
    """Whether the raylet this process started (`--ray local`) still runs; always True for a
    joined cluster, whose raylets this process does not own. Ray's node handle is private
    API, so its absence only turns the watch off."""
    node: Any = getattr(ray._private.worker, "_global_node", None)
    try:
        process = node.all_processes["raylet"][0].process
    except (AttributeError, KeyError, IndexError, TypeError):
        return lambda: True
    return lambda: process.poll() is None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _on_driver_node() -> NodeAffinitySchedulingStrategy:
    return NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(),
                                          soft=False)


def _limiter_for(spec: ModelSpec, model: LLM) -> Any | None:
    """The cluster-wide gate of `model`'s requests: a served model's always (its concurrency),
    any model's where the run (`--concurrency`, `--rpm`, `GTSTEER_RPM`) or the client bounds
    it; None where nothing bounds it."""
    rate = model.session.rate if model.session is not None else RateLimit.of()
    per_minute = min((r for r in (rate.rpm, model.rpm) if r), default=None)
    in_flight = min(model.max_concurrency, rate.concurrency or model.max_concurrency)
    bounded = per_minute is not None or in_flight < model.backend.max_concurrency
    if not bounded and (spec.backend is not None or in_process(spec.model)):
        return None
    actor = ray.remote(RateLimiter).options(num_cpus=0, scheduling_strategy=_on_driver_node())
    return actor.remote(in_flight, per_minute, spec.timeout_s * (spec.max_retries + 1))


def units_at_once() -> int:
    """Tasks in flight: one per CPU of the cluster. Ray lends the CPU of a task blocked in
    `ray.get` (every cache lookup through the `CacheReader` is one) to the next queued task, so
    submitting every unit at once would run more tasks than CPUs, each loading its own model
    and sharing cores with the others (four llama.cpp tasks on `--workers 2`)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def run_on_ray(
    work: Callable[[U, LLM], R],
    units: Sequence[U],
    model: LLM,
    options: RayOptions,
    *,
    on_result: Callable[[int, R], None] | None = None,
    progress: bool = False,
    label: str = "units",
) -> UnitsRun[R]:
    """`run_units` on Ray: one task per unit, results in the units' order, each task's new
    cache entries stored by this process as the task finishes."""
    spec = ModelSpec.of(model)
    with connected(options):
        reader = None
        if model.cache is not None:
            if not isinstance(model.cache, ResponseCache):
                raise TypeError("a Ray run reads and writes the driver's on-disk ResponseCache")
            reader = ray.remote(CacheReader).options(
                num_cpus=0, scheduling_strategy=_on_driver_node()
            ).remote(str(model.cache.directory))
        limiter = _limiter_for(spec, model)
        spec_ref = ray.put(spec)
        queued = iter(enumerate(units))
        pending: dict[Any, int] = {}

        def submit() -> None:
            for i, unit in itertools.islice(queued, 1):
                ref = _run_unit.remote(work, unit, spec_ref, model.cache is not None, reader,
                                       limiter, options.imports)
                pending[ref] = i

        for _ in range(units_at_once()):
            submit()
        results: dict[int, TaskResult] = {}
        try:
            raylet_alive = _local_raylet_watch()
            while pending:
                # With a timeout, to notice this node's raylet dying: Ray then ends the
                # process some 15 s later with no word of its own.
                done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                if not done:
                    if not raylet_alive():
                        raise _cluster_failed("the raylet of this machine's Ray node died",
                                              len(results), len(units), label)
                    continue
                i = pending.pop(done[0])
                submit()  # the next unit takes the finished one's CPU
                try:
                    result = ray.get(done[0])
                except ray.exceptions.RayTaskError as exc:
                    raise exc.as_instanceof_cause() from None
                except ray.exceptions.RayError as exc:  # the cluster, not the unit
                    raise _cluster_failed(f"{type(exc).__name__}: {_first_line(exc)}",
                                          len(results), len(units), label) from None
                if model.cache is not None:
                    for key, value in result.entries.items():
                        model.cache.set(key, value)
                model.meter.absorb(result.usage)  # the run's bill counts the task's calls
                results[i] = result
                if on_result is not None:
                    on_result(i, result.value)
                if progress:
                    shown.unit(f"{label} done on Ray", len(results), len(units),
                               started=False)
                if model.session is not None:  # a budget: checked as each unit finishes
                    model.session.check_spent(model.model)
        finally:
            for ref in pending:  # a unit failed the run (or Ctrl-C): stop the others
                with contextlib.suppress(ray.exceptions.RayError):  # a dead node's task
                    ray.cancel(ref, force=True)
    ordered = [results[i] for i in range(len(units))]
    calls = sum((r.usage.since(UsageReport()) for r in ordered), LLMCalls())
    modes = ordered[0].capabilities if ordered else model.capabilities()
    return UnitsRun([r.value for r in ordered], calls, modes,
                    cost_usd=sum(r.usage.cost_usd for r in ordered),
                    nodes=[r.node for r in ordered],
                    unpriced_calls=sum(r.usage.unpriced_calls for r in ordered))
