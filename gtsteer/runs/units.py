"""Run a driver's units of work (one instance, one game) serially or as Ray tasks.

Every driver hands its per-unit function here instead of looping itself, so the serial run and
the Ray run (`--ray ADDRESS`) share one code path: `work(unit, model)` is the same function in
both, called with the driver's model here and with a worker-built model on a Ray worker.
Without `ray`, nothing of Ray is imported (`gtsteer.runs.ray_pool` is loaded only on demand).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from gtsteer.llm import LLM
from gtsteer.llm.usage import LLMCalls

U = TypeVar("U")
R = TypeVar("R")

#: A DNS name (RFC 1123 labels) or an IPv4 address; an IPv6 address goes in brackets.
_HOSTNAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")


class RayClusterError(RuntimeError):
    """The Ray cluster cannot be reached, or failed under a run (a raylet died); the message
    names the address and says what was kept."""


def head_address(address: str) -> tuple[str, int]:
    """`(host, port)` of a `--ray HOST:PORT` (IPv6 as `[::1]:6379`); a ValueError naming the
    value when it is no such address (Ray itself would wait for it forever)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--ray {address!r}: give `local`, `auto` or HOST:PORT (e.g."
                         " 10.0.0.5:6379)")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"--ray {address}: the port must be a number from 1 to 65535, got"
                         f" {port_text!r}")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"--ray {address}: {host} is not an IPv6 address") from None
        return host[1:-1], int(port_text)
    if not _HOSTNAME.fullmatch(host):
        raise ValueError(f"--ray {address}: {host!r} is not a host name or IP address")
    return host, int(port_text)


@dataclass(frozen=True)
class RayOptions:
    """Where Ray tasks run: `local` (a Ray instance started on this machine with `workers`
    CPUs), `auto` (the cluster this machine belongs to) or `HOST:PORT` (a head node)."""

    address: str
    workers: int | None = None
    #: Modules each task imports first: domain code registered outside gtsteer (a utility a
    #: config names), which a worker process has not loaded otherwise.
    imports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise ValueError("--ray: give `local`, `auto` or HOST:PORT")
        if self.address not in ("local", "auto"):
            head_address(self.address)
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers: must be >= 1, got {self.workers}")
        if self.workers is not None and self.address != "local":
            raise ValueError("--workers: only with --ray local (a joined cluster has its own"
                             " CPUs)")


@dataclass
class UnitsRun(Generic[R]):
    """Per-unit results in the units' order, the model calls they made and their cost, how the
    model served structured output and choices (`LLM.capabilities`)."""

    values: list[R]
    calls: LLMCalls
    capabilities: dict[str, str | None] = field(default_factory=dict)
    cost_usd: float = 0.0
    #: The Ray node each unit ran on (empty for a serial run).
    nodes: list[str] = field(default_factory=list)


def run_units(
    work: Callable[[U, LLM], R],
    units: Sequence[U],
    model: LLM,
    *,
    ray: RayOptions | None = None,
    on_result: Callable[[int, R], None] | None = None,
    progress: bool = False,
    label: str = "units",
) -> UnitsRun[R]:
    """`work(unit, model)` for every unit; `on_result(i, value)` runs in this process as each
    unit finishes (drivers write their per-unit files there); `progress` shows a bar of units
done across the cluster on Ray. An exception `work` lets out
    stops the run, serial or on Ray, so drivers catch what belongs to one unit themselves."""
    if ray is not None:
        from gtsteer.runs.ray_pool import run_on_ray  # Ray is imported only here

        return run_on_ray(work, units, model, ray, on_result=on_result, progress=progress,
                          label=label)
    before = model.usage
    values: list[R] = []
    for i, unit in enumerate(units):  # serial: the units' own bars show progress
        value = work(unit, model)
        values.append(value)
        if on_result is not None:
            on_result(i, value)
    after = model.usage
    return UnitsRun(values, after.since(before), model.capabilities(),
                    cost_usd=after.cost_usd - before.cost_usd)


@contextmanager
def ray_session(ray: RayOptions | None) -> Iterator[None]:
    """One Ray session around a driver that runs units several times (a PSRO run builds a
    meta-game per iteration and oracle; steer-train plays logged then playstyle games): Ray
    starts once, not per `run_units`. Serial: nothing, and Ray is not imported."""
    if ray is None:
        yield
        return
    from gtsteer.runs.ray_pool import connected  # Ray is imported only here

    with connected(ray):
        yield
