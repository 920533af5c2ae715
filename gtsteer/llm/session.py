"""What one run spends, across every model it calls: the run's meter, its request gate
(`--concurrency`, `--rpm`) and its budget (`--max-calls`, `--max-tokens`, `--max-cost`).

A command opens one session around its run (`with session(rate, budget) as s:`); every `LLM`
built inside it counts into `s.meter` as well as its own, takes a slot of `s.gate` before each
call and asks `s.budget` first, so the writer, the reader and the proposer of a run share one
limit and one bill. Outside a session nothing is shared and nothing is bounded (the Python API
bounds a client with `LLM(..., max_concurrency=, rpm=)`).

A budget counts new calls only: a cache hit is free. It is checked before each call, so calls
already in flight finish (at most `--concurrency` of them past the limit); everything finished
is in the cache, and a rerun with a higher limit continues from there.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from gtsteer.llm.dry_run import DryRun
from gtsteer.llm.rate import RateLimit, RequestGate
from gtsteer.llm.usage import UsageMeter, UsageReport


class BudgetExceeded(RuntimeError):
    """The run reached one of its limits; what finished is cached and saved. Not an LLMError:
    no driver may record it as one unit's failure and go on."""

    def __init__(self, flag: str, limit: str, used: str):
        self.flag, self.limit, self.used = flag, limit, used
        super().__init__(f"{flag} {limit} reached ({used})")


@dataclass(frozen=True)
class Budget:
    """Limits on a run's new calls, tokens (prompt + completion) and cost in USD (None: none)."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        if self.max_calls is not None and self.max_calls < 1:
            raise ValueError(f"--max-calls: must be >= 1, got {self.max_calls}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"--max-tokens: must be >= 1, got {self.max_tokens}")
        if self.max_cost is not None and not (self.max_cost > 0 and math.isfinite(self.max_cost)):
            raise ValueError(f"--max-cost: must be a positive number of USD, got {self.max_cost}")


@dataclass
class Session:
    rate: RateLimit = field(default_factory=RateLimit)
    budget: Budget = field(default_factory=Budget)
    meter: UsageMeter = field(default_factory=UsageMeter)
    #: A dry run (`gtsteer.llm.dry_run`): clients count what they would send, and send nothing.
    dry: DryRun | None = None

    def __post_init__(self) -> None:
        self.gate = RequestGate(self.rate) if self.rate.bounded else None
        self._lock = threading.Lock()
        self.calls_started = 0

    def check(self, model: str) -> None:
        """Count a new call about to start; BudgetExceeded instead where it would go past a
        limit. Calls are counted as they start (so `max_calls` is exact however many run at
        once), tokens and cost as they finish."""
        used = self.meter.snapshot()
        with self._lock:
            self._check(used, self.calls_started, model)
            self.calls_started += 1

    def check_spent(self, model: str) -> None:
        """BudgetExceeded where the calls finished so far reached a limit (a Ray run's, whose
        calls start in other processes: checked as each unit's usage comes home)."""
        used = self.meter.snapshot()
        self._check(used, used.new_calls, model)

    def _check(self, used: UsageReport, calls: int, model: str) -> None:
        b = self.budget
        if b.max_calls is not None and calls >= b.max_calls:
            raise BudgetExceeded("--max-calls", f"{b.max_calls:,}", f"{calls:,} new calls")
        tokens = used.prompt_tokens + used.completion_tokens
        if b.max_tokens is not None and tokens >= b.max_tokens:
            raise BudgetExceeded("--max-tokens", f"{b.max_tokens:,}", f"{tokens:,} tokens")
        if b.max_cost is not None:
            if used.unpriced_calls:
                raise BudgetExceeded("--max-cost", f"${b.max_cost:g}",
                                     f"litellm cannot price {model}: cost unknown; bound the"
                                     " run with --max-tokens instead")
            if used.cost_usd >= b.max_cost:
                raise BudgetExceeded("--max-cost", f"${b.max_cost:g}", f"${used.cost_usd:.4f}")


_current: ContextVar[Session | None] = ContextVar("gtsteer_session", default=None)


def current() -> Session | None:
    """The session of the run in progress, if any (a client captures it when built)."""
    return _current.get()


@contextmanager
def session(rate: RateLimit | None = None, budget: Budget | None = None,
            dry: DryRun | None = None) -> Iterator[Session]:
    """One run's shared meter, gate and budget (see the module docstring); with `dry`, a dry
    run."""
    s = Session(rate or RateLimit(), budget or Budget(), dry=dry)
    token = _current.set(s)
    try:
        yield s
    finally:
        _current.reset(token)
