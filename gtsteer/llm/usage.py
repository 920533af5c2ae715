"""Per-run usage metering: requests, cache hits, new calls, tokens, cost, latency."""

from __future__ import annotations

import threading

from pydantic import BaseModel

from gtsteer.llm.types import Usage


class LLMCalls(BaseModel):
    """Model requests over a stretch of work: all of them, the cache's share, the new calls."""

    requests: int = 0
    cache_hits: int = 0
    new_calls: int = 0

    @property
    def described(self) -> str:
        """`12 requests, 4 cache hits, 8 new calls`, as every command's summary line says it."""
        return f"{self.requests} requests, {self.cache_hits} cache hits, {self.new_calls} new calls"

    def __add__(self, other: LLMCalls) -> LLMCalls:
        """Summed counters, so `sum(calls, LLMCalls())` totals several models."""
        return LLMCalls(
            requests=self.requests + other.requests,
            cache_hits=self.cache_hits + other.cache_hits,
            new_calls=self.new_calls + other.new_calls,
        )


#: `UsageReport`'s plain counters.
_COUNTERS = ("requests", "cache_hits", "new_calls", "failures", "retries", "prompt_tokens",
             "completion_tokens", "cost_usd", "latency_s", "unpriced_calls", "rate_waits",
             "rate_wait_s")
#: Counters only some backends report (fields of `Usage` and `UsageReport` alike): None until a
#: call reports one, so "not reported" never reads as 0.
OPTIONAL_COUNTERS = ("prompt_tokens_evaluated", "tokens_novel", "tokens_novel_generated",
                     "prompt_tokens_block_floor")


def add_optional(total: object, other: object) -> None:
    """Add `other`'s optional counters into `total`'s (a report or a usage), where reported."""
    for name in OPTIONAL_COUNTERS:
        value = getattr(other, name)
        if value is not None:
            setattr(total, name, (getattr(total, name) or 0) + value)


class UsageReport(BaseModel):
    requests: int = 0
    cache_hits: int = 0
    new_calls: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    #: Of `prompt_tokens`, those evaluated afresh (None: no backend call reported it).
    prompt_tokens_evaluated: int | None = None
    #: The sums of `Usage`'s counters of the same names (None: not counted): tokens no earlier
    #: call had computed, the generated ones among them, and the prompt tokens an unbounded
    #: block cache would have evaluated.
    tokens_novel: int | None = None
    tokens_novel_generated: int | None = None
    prompt_tokens_block_floor: int | None = None
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    #: New calls whose price litellm's cost map does not know: `cost` is then unknown.
    unpriced_calls: int = 0
    #: Waits a rate limit imposed (the `--rpm` window, a server's 429) and their seconds.
    rate_waits: int = 0
    rate_wait_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float | None:
        """The cost in USD, None (unknown) when a new call could not be priced."""
        return None if self.unpriced_calls else self.cost_usd

    def since(self, before: UsageReport) -> LLMCalls:
        """The calls made between the snapshot `before` and this one."""
        return LLMCalls(
            requests=self.requests - before.requests,
            cache_hits=self.cache_hits - before.cache_hits,
            new_calls=self.new_calls - before.new_calls,
        )

    def add(self, other: UsageReport) -> None:
        """Count `other` in this report too (a profile's phase summing its stretches)."""
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        add_optional(self, other)

    def minus(self, before: UsageReport) -> UsageReport:
        """Everything counted between the snapshot `before` and this one."""
        optional = {name: None if getattr(self, name) is None
                    else getattr(self, name) - (getattr(before, name) or 0)
                    for name in OPTIONAL_COUNTERS}
        return UsageReport(**{name: getattr(self, name) - getattr(before, name)
                              for name in _COUNTERS}, **optional)


class UsageMeter:
    """Thread-safe counters; `snapshot()` gives an immutable report. A meter with a `parent`
    (the run's, `gtsteer.llm.session`) counts everything there too."""

    def __init__(self, parent: UsageMeter | None = None) -> None:
        self._lock = threading.Lock()
        self._report = UsageReport()
        self.parent = parent

    def absorb(self, other: UsageReport) -> None:
        """Count `other` here and in the parent: every counter below is one such report (a Ray
        task also answers with a worker-built client, whose counters come home as a report)."""
        with self._lock:
            self._report.add(other)
        if self.parent is not None:
            self.parent.absorb(other)

    def request(self, *, cached: bool) -> None:
        self.absorb(UsageReport(requests=1, cache_hits=int(cached)))

    def call(self, usage: Usage) -> None:
        self.absorb(UsageReport(
            new_calls=1, unpriced_calls=int(not usage.priced),
            **usage.model_dump(include={"prompt_tokens", "completion_tokens", "cost_usd",
                                        "latency_s", *OPTIONAL_COUNTERS})))

    def failure(self) -> None:
        self.absorb(UsageReport(failures=1))

    def retry(self) -> None:
        self.absorb(UsageReport(retries=1))

    def rate_wait(self, seconds: float) -> None:
        self.absorb(UsageReport(rate_waits=1, rate_wait_s=seconds))

    def snapshot(self) -> UsageReport:
        with self._lock:
            return self._report.model_copy()
