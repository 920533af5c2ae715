"""The words of a run's units of work: where Ray tasks run (`RayOptions`, from `--ray` and
`--workers`), what a batch of units gives back (`UnitsRun`) and the error of a cluster that
fails (`RayClusterError`).

Plain data, imported by both sides: the executor that runs units serially or as Ray tasks
(`gtsteer.runs.executor`) and the Ray side itself (`gtsteer.runs.ray_pool`), which this module
never imports.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from gtsteer.llm.usage import LLMCalls

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
    #: New calls litellm could not price: `cost_usd` is then unknown.
    unpriced_calls: int = 0

    @property
    def priced(self) -> bool:
        return not self.unpriced_calls
