"""Timeouts, backoff and retries around any backend (no network, no model)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gtsteer.llm import LLM, Backend, GenerationRequest, LLMCallError, RawCompletion


class SlowBackend(Backend):
    """Answers after `delay_s`; counts calls that started and calls that finished."""

    kind = "slow"

    def __init__(self, delay_s: float, cancellable: bool):
        super().__init__("slow-1")
        self.delay_s = delay_s
        self.cancellable = cancellable
        self.started = 0
        self.finished = 0

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        self.started += 1
        await asyncio.sleep(self.delay_s)
        self.finished += 1
        return RawCompletion(text="done")


def test_a_cancellable_call_past_its_timeout_is_retried_then_fails() -> None:
    backend = SlowBackend(0.5, cancellable=True)
    llm = LLM("slow", backend=backend, timeout_s=0.05, max_retries=2, backoff_initial_s=0.001)
    with pytest.raises(LLMCallError, match="no answer within 0.05 s") as info:
        llm.generate_sync("hi")
    assert info.value.attempts == 3
    assert (backend.started, backend.finished) == (3, 0)
    assert llm.usage.retries == 2


def test_a_non_cancellable_call_is_waited_for_not_duplicated() -> None:
    """In-process compute (llama.cpp) cannot be abandoned: no timeout, no queued duplicates."""
    backend = SlowBackend(0.2, cancellable=False)
    llm = LLM("slow", backend=backend, timeout_s=0.05, max_retries=2)
    assert llm.generate_sync("hi").text == "done"
    assert (backend.started, backend.finished) == (1, 1)
    assert llm.usage.retries == 0


def test_the_local_backend_is_not_cancellable() -> None:
    from gtsteer.llm.backends.local import LocalBackend

    assert LocalBackend.cancellable is False
    assert Backend.cancellable is True


def test_backoff_grows_and_is_bounded() -> None:
    """Jitter scales with the delay (tenacity's default added up to a whole second)."""
    llm = LLM("fake", use_cache=False, backoff_initial_s=0.01, backoff_max_s=0.05)

    class State:
        attempt_number = 1

    delays = []
    for attempt in (1, 2, 3, 10):
        State.attempt_number = attempt
        delays.append(llm._backoff_delay(State()))  # type: ignore[arg-type]
    assert 0.01 <= delays[0] <= 0.02
    assert 0.02 <= delays[1] <= 0.04
    assert all(d <= 0.05 for d in delays)
    assert delays[3] == pytest.approx(0.05)


def test_retries_wait_the_configured_small_backoff() -> None:
    class Flaky(Backend):
        kind = "flaky"

        def __init__(self) -> None:
            super().__init__("flaky")
            self.calls = 0

        async def complete(
            self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
        ) -> RawCompletion:
            from gtsteer.llm import TransientLLMError

            self.calls += 1
            if self.calls < 4:
                raise TransientLLMError("busy")
            return RawCompletion(text="ok")

    llm = LLM("flaky", backend=Flaky(), use_cache=False, backoff_initial_s=0.01)
    waits: list[float] = []
    backoff = llm._backoff_delay

    def recorded(state):  # the wait tenacity sleeps before each retry
        waits.append(backoff(state))
        return waits[-1]

    llm._backoff_delay = recorded  # type: ignore[method-assign]
    assert llm.generate_sync("x").text == "ok"
    assert llm.usage.retries == 3 and len(waits) == 3
    for k, wait in enumerate(waits):  # 0.01-0.02, 0.02-0.04, 0.04-0.08 s
        assert 0.01 * 2**k <= wait <= 0.02 * 2**k


class FlakyScorer(Backend):
    """Scores options from log-probabilities, but the first `failures` scoring calls drop
    the connection (what a served model's keep-alive race looks like to the client)."""

    kind = "flaky-scorer"

    def __init__(self, failures: int, delay_s: float = 0.0):
        super().__init__("flaky-scorer")
        self.failures = failures
        self.delay_s = delay_s
        self.calls = 0

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        raise AssertionError("a scored choice never falls back to a constrained answer here")

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Any]:
        from gtsteer.llm import TransientLLMError
        from gtsteer.llm.types import Usage

        self.calls += 1
        await asyncio.sleep(self.delay_s)
        if self.calls <= self.failures:
            raise TransientLLMError("APIConnectionError (status None): Connection error.")
        return {o: -float(i) for i, o in enumerate(options)}, Usage(latency_s=0.001)


def test_a_scored_choice_is_retried_on_a_dropped_connection() -> None:
    """The reward model's `choose` goes to `score_options_with_usage`: a transient error there
    is retried with backoff like any other call (it once failed a whole solve instance)."""
    backend = FlakyScorer(failures=2)
    llm = LLM("flaky", backend=backend, use_cache=False, max_retries=3, backoff_initial_s=0.001)
    result = llm.choose_sync("Pick one.", ["yes", "no"])
    assert (result.choice, result.method) == ("yes", "loglik")
    assert backend.calls == 3
    assert llm.usage.retries == 2


def test_a_scored_choice_gives_up_after_its_retries_naming_the_cause() -> None:
    backend = FlakyScorer(failures=10)
    llm = LLM("flaky", backend=backend, use_cache=False, max_retries=2, backoff_initial_s=0.001)
    with pytest.raises(LLMCallError, match="gave up after 3 tries.*Connection error") as info:
        llm.choose_sync("Pick one.", ["yes", "no"])
    assert info.value.attempts == 3 and backend.calls == 3


def test_a_scored_choice_past_its_timeout_is_retried() -> None:
    backend = FlakyScorer(failures=0, delay_s=0.5)
    llm = LLM("flaky", backend=backend, use_cache=False, timeout_s=0.05, max_retries=1,
              backoff_initial_s=0.001)
    with pytest.raises(LLMCallError, match="no answer within 0.05 s"):
        llm.choose_sync("Pick one.", ["yes", "no"])
    assert backend.calls == 2
