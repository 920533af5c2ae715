"""Identical requests in flight share one backend call (a backend that ignores seeds could
otherwise answer them differently, and the cache would keep only the last answer)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from pydantic import BaseModel

from gtsteer.llm import LLM, Backend, GenerationRequest, LLMCallError, RawCompletion
from gtsteer.llm.types import Usage


class CountingBackend(Backend):
    """Every call answers differently (like a provider that ignores the seed)."""

    kind = "counting"
    max_concurrency = 8
    supports_grammar = True

    def __init__(self, fail: bool = False):
        super().__init__("counting")
        self.calls = 0
        self.fail = fail
        self._n = itertools.count()

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        self.calls += 1
        await asyncio.sleep(0.01)  # stay in flight while the twin request arrives
        if self.fail:
            raise ValueError("backend broke")
        n = next(self._n)
        return RawCompletion(text=f'{{"x": {n}}}' if json_schema else f"answer {n}")

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        self.calls += 1
        await asyncio.sleep(0.01)
        return {o: float(i == next(self._n) % len(options)) for i, o in enumerate(options)}


class X(BaseModel):
    x: int


async def _twice(coro_factory: Any) -> list[Any]:
    return await asyncio.gather(coro_factory(), coro_factory())


def test_identical_generations_in_flight_share_one_call() -> None:
    backend = CountingBackend()
    llm = LLM(backend=backend)
    a, b = asyncio.run(_twice(lambda: llm.generate("same prompt", seed=1)))
    assert backend.calls == 1
    assert a.text == b.text == "answer 0"
    assert sorted([a.cached, b.cached]) == [False, True]
    usage = llm.usage
    assert (usage.requests, usage.cache_hits, usage.new_calls) == (2, 1, 1)
    # Different requests still get their own calls.
    c, d = asyncio.run(asyncio.wait_for(_pair(llm), 5))
    assert backend.calls == 3 and c.text != d.text


async def _pair(llm: LLM) -> list[Any]:
    return await asyncio.gather(llm.generate("p", seed=1), llm.generate("p", seed=2))


def test_identical_structured_and_choice_requests_share_one_call() -> None:
    backend = CountingBackend()
    llm = LLM(backend=backend)
    a, b = asyncio.run(_twice(lambda: llm.structured("give x", X)))
    assert backend.calls == 1 and a.value == b.value
    c, d = asyncio.run(_twice(lambda: llm.choose("pick", ["yes", "no"])))
    assert backend.calls == 2 and c.choice == d.choice


def test_a_failed_call_fails_every_waiter_and_is_not_cached() -> None:
    backend = CountingBackend(fail=True)
    llm = LLM(backend=backend, max_retries=0)

    async def both() -> list[Any]:
        return await asyncio.gather(
            llm.generate("x"), llm.generate("x"), return_exceptions=True
        )

    results = asyncio.run(both())
    assert backend.calls == 1
    assert all(isinstance(r, (ValueError, LLMCallError)) for r in results)
    backend.fail = False
    assert llm.generate_sync("x").text == "answer 0"  # nothing stale was cached
    assert backend.calls == 2


class LongBackend(CountingBackend):
    """Answers that ran into the token limit: their usage says how long they were."""

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        raw = await super().complete(request, json_schema)
        return raw.model_copy(update={"usage": Usage(prompt_tokens=7,
                                                     completion_tokens=request.max_tokens)})


def test_a_twin_in_flight_reports_the_completions_length_as_a_cache_hit_does() -> None:
    """Callers read `usage.completion_tokens` to tell a cut answer (the dialogue cleaner drops
    an unfinished last sentence); a twin must not read 0 where the leader and a later cache
    hit read the limit, or the same sample would be cleaned two ways by timing alone."""
    llm = LLM(backend=LongBackend())
    a, b = asyncio.run(_twice(lambda: llm.generate("same prompt", seed=1, max_tokens=48)))
    later = llm.generate_sync("same prompt", seed=1, max_tokens=48)
    assert later.cached
    assert a.usage.completion_tokens == b.usage.completion_tokens == 48
    assert later.usage.completion_tokens == 48
    assert llm.usage.completion_tokens == 48  # the meter still counts the one call once
