"""The one interface through which gtsteer talks to language models.

`LLM` wraps a backend with a persistent cache, bounded concurrency, per-call timeouts,
exponential backoff with jitter on transient errors, retry-with-feedback for structured output,
and usage metering. Async first; `*_sync` wrappers serve scripts.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import math
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
)

from gtsteer.llm import session, waits
from gtsteer.llm.backends import Backend, make_backend
from gtsteer.llm.cache import AnswerStore, ResponseCache, cache_key
from gtsteer.llm.errors import (
    LLMCallError,
    ModelConfigError,
    StructuredOutputError,
    TransientLLMError,
)
from gtsteer.llm.rate import RateLimit, RequestGate
from gtsteer.llm.structured import choice_model, feedback_text, problems_of
from gtsteer.llm.types import (
    ChoiceResult,
    Completion,
    GenerationRequest,
    Message,
    RawCompletion,
    Structured,
    Usage,
)
from gtsteer.llm.usage import UsageMeter, UsageReport, add_optional

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
PromptLike = str | Sequence[Message] | Sequence[dict[str, str]]
#: The longest wait between two tries by default (a `Retry-After`, the backoff):
#: `--max-wait` changes it.
RETRY_AFTER_MAX_S = 300.0
#: How long one try may take by default (`--request-timeout`).
REQUEST_TIMEOUT_S = 120.0


def to_request(prompt: PromptLike, **params: Any) -> GenerationRequest:
    if isinstance(prompt, str):
        return GenerationRequest(prompt=prompt, **params)
    messages = [m if isinstance(m, Message) else Message.model_validate(m) for m in prompt]
    return GenerationRequest(messages=messages, **params)


def run_sync(coro: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine from sync code, even when called inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: dict[str, Any] = {}

    def worker() -> None:
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = exc

    # The worker runs in a copy of this context, as a task would (a cost profile or other
    # context variable set by the caller stays visible to the coroutine).
    thread = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def as_llm(llm: str | LLM) -> LLM:
    """The client of a run: an `LLM` as given (its meter and cache shared with the caller), or
    a new one built from a model string (`"local"`, `"fake"`, `"openai/gpt-4o-mini"`, ...).
    The one place a driver turns the `llm` it was given into a client."""
    return llm if isinstance(llm, LLM) else LLM(llm)


def model_string(llm: str | LLM) -> str:
    """The model string of `llm` without building a client: what run folders and result
    files name. Equal to `as_llm(llm).model` (make_backend strips the string the same way)."""
    return llm.strip() if isinstance(llm, str) else llm.model


class LLM:
    """A model with cache, retries and metering. `LLM("fake")`, `LLM("local")`,
    `LLM("openai/...")`. `max_concurrency` (default: the backend's) and `rpm` bound this
    client's requests; a client built inside a run's `gtsteer.llm.session` also counts into,
    waits on and is bounded by the run's meter, gate and budget."""

    def __init__(
        self,
        model: str = "local",
        *,
        backend: Backend | None = None,
        cache: AnswerStore | None = None,
        use_cache: bool = True,
        api_base: str | None = None,
        api_key: str | None = None,
        max_concurrency: int | None = None,
        rpm: int | None = None,
        timeout_s: float = REQUEST_TIMEOUT_S,
        max_retries: int = 4,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        structured_attempts: int = 3,
        max_wait_s: float = RETRY_AFTER_MAX_S,
        api_mode: str = "chat",
    ):
        if not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise ValueError(f"--request-timeout: must be a positive number of seconds, got"
                             f" {timeout_s}")
        if not (max_wait_s >= 0 and math.isfinite(max_wait_s)):
            raise ValueError(f"--max-wait: must be a number of seconds >= 0, got {max_wait_s}")
        self.backend = backend or make_backend(
            model, api_base=api_base, timeout_s=timeout_s, api_key=api_key, api_mode=api_mode
        )
        self.model = self.backend.model  # the model string as written, e.g. `local:smollm2-135m`
        #: The run this client belongs to (captured when built), or None.
        self.session = session.current()
        # In a dry run a stand-in counts what would be sent and answers without storing.
        self.dry = (self.session.dry.wrap(self.backend)
                    if self.session is not None and self.session.dry is not None else None)
        if self.dry is not None:
            self.backend = self.dry
        elif (self.session is not None and self.session.budget.max_cost is not None
              and self.backend.price(1, 1) is None):
            # refused before its first call: a cap on an unknown cost would stop only after
            raise ModelConfigError(
                f"--max-cost: litellm has no price for {self.model}, so its cost cannot be"
                " bounded; bound the run with --max-tokens or --max-calls instead")
        # `is None`, not `or`: an empty ResponseCache is falsy (it has __len__).
        self.cache: AnswerStore | None = (
            (cache if cache is not None else ResponseCache()) if use_cache else None
        )
        self.max_concurrency = max_concurrency or self.backend.max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = min(backoff_max_s, max_wait_s)
        #: The longest wait between two tries, a server's `Retry-After` included.
        self.max_wait_s = max_wait_s
        self.structured_attempts = structured_attempts
        self.meter = UsageMeter(self.session.meter if self.session is not None else None)
        self.rpm = rpm
        # One gate for this client's own bounds, the same kind as the run's (it works across
        # the event loops the sync wrappers start).
        self._gate = RequestGate(RateLimit(self.max_concurrency, rpm))
        self._prepared = False
        # Requests in flight by cache key, per loop: identical concurrent requests share one call.
        self._flights: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[Any]]
        ] = weakref.WeakKeyDictionary()

    # ---- public API -------------------------------------------------------------------------

    @property
    def usage(self) -> UsageReport:
        return self.meter.snapshot()

    def capabilities(self) -> dict[str, str | None]:
        """How this model serves structured output (`json_schema`, `json_object`, `prompt`,
        `grammar`) and `choose` (`loglik`, `constrained`, `hash`), for run summaries; a
        served endpoint's entries stay None until a request has found them out."""
        return self.backend.capabilities()

    async def generate(
        self,
        prompt: PromptLike,
        *,
        seed: int = 0,
        temperature: float = 0.7,
        max_tokens: int = 128,
        stop: list[str] | None = None,
        end_rule: str | None = None,
        decided: Callable[[str], bool] | None = None,
    ) -> Completion:
        """`decided` (with its rule's name, `end_rule`, which the cache key hashes) lets the
        local backend end generation once the caller's cleaning of the text so far is final."""
        request = to_request(
            prompt, seed=seed, temperature=temperature, max_tokens=max_tokens, stop=stop or [],
            end_rule=end_rule, decided=decided,
        )
        key = self._key("text", request)
        hit = self._cache_get(key, meter=False)
        if hit is not None:
            self.meter.request(cached=True)
            if self.dry is not None:
                self.dry.seen("text", hit)
            return Completion(text=hit["text"], cached=True, usage=Usage(**hit["usage"]))

        async def call() -> RawCompletion:
            raw = await self._call(request, None)
            self._cache_set(key, {"text": raw.text, "usage": raw.usage.model_dump()})
            return raw

        raw, shared = await self._once(key, call)
        # A twin reports the completion's usage, as a cache hit does (the meter counted the
        # call once): callers tell a cut answer by its length, which must not depend on timing.
        return Completion(text=raw.text, cached=shared, usage=raw.usage)

    async def structured(
        self,
        prompt: PromptLike,
        schema: type[T],
        *,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 256,
        attempts: int | None = None,
    ) -> Structured[T]:
        """A validated `schema` object; invalid answers are retried with feedback naming the
        problem."""
        attempts = attempts or self.structured_attempts
        json_schema = schema.model_json_schema()
        request = to_request(prompt, seed=seed, temperature=temperature, max_tokens=max_tokens)
        if not self.backend.supports_grammar:
            request = request.with_note(
                "Answer with only a JSON object matching this JSON schema:\n"
                + json.dumps(json_schema))
        key = self._key("structured", request, schema=json_schema)
        hit = self._cache_get(key, meter=False)
        if hit is not None:
            value, _ = problems_of(hit["raw"], schema)
            if value is not None:
                self.meter.request(cached=True)
                if self.dry is not None:
                    self.dry.seen("structured", hit)
                return Structured[schema](  # type: ignore[valid-type]
                    value=value, raw=hit["raw"], cached=True, attempts=0, usage=Usage()
                )
        result, shared = await self._once(
            key, lambda: self._structured_call(key, request, schema, json_schema, attempts)
        )
        if shared:
            return result.model_copy(update={"cached": True, "attempts": 0, "usage": Usage()})
        return result

    async def _structured_call(
        self,
        key: str,
        request: GenerationRequest,
        schema: type[T],
        json_schema: dict[str, Any],
        attempts: int,
    ) -> Structured[T]:
        """Ask until the answer validates (with feedback naming the problem), then cache it."""
        total = Usage()
        current = request
        raw, problems = "", list[str]()
        for attempt in range(1, attempts + 1):
            result = await self._call(current, json_schema)
            total = _add(total, result.usage)
            raw = result.text
            value, problems = problems_of(raw, schema)
            if value is not None:
                # Only valid answers are cached; the key is the original request.
                self._cache_set(key, {"raw": raw})
                return Structured[schema](  # type: ignore[valid-type]
                    value=value, raw=raw, cached=False, attempts=attempt, usage=total
                )
            if attempt < attempts:  # a retry only when another try follows
                self.meter.retry()
                current = _with_feedback(current, raw, problems)
            if result.usage.completion_tokens >= current.max_tokens:
                # Truncated mid-object (a base model rambling inside a string): give room.
                current = current.model_copy(
                    update={"max_tokens": min(current.max_tokens * 2, 2048)}
                )
        self.meter.failure()
        raise StructuredOutputError(schema.__name__, attempts, raw, problems)

    async def choose(
        self, prompt: PromptLike, options: Sequence[str], *, seed: int = 0
    ) -> ChoiceResult:
        """Pick one of `options`: log-likelihood scores where available, else a constrained
        choice."""
        options = list(dict.fromkeys(options))
        if len(options) < 2:
            raise ValueError("choose() needs at least two distinct options")
        request = to_request(prompt, seed=seed, temperature=0.0, max_tokens=1)
        key = self._key("choice", request, options=options)
        # Metered here only on a hit or a scoring call: the constrained path's structured()
        # call meters itself, and one choice must count as one request.
        hit = self._cache_get(key, meter=False)
        if hit is not None:
            self.meter.request(cached=True)
            return ChoiceResult(**hit, cached=True)
        result, shared = await self._once(
            key, lambda: self._choice_call(key, prompt, request, options, seed), meter=False
        )
        return result.model_copy(update={"cached": True}) if shared else result

    async def _choice_call(
        self,
        key: str,
        prompt: PromptLike,
        request: GenerationRequest,
        options: list[str],
        seed: int,
    ) -> ChoiceResult:
        scores, usage = await self._retrying(
            lambda: self.backend.score_options_with_usage(request, options)
        )
        if scores is None and usage.latency_s > 0:
            self.meter.call(usage)  # a scoring call that found no log-probabilities still ran
        if scores is not None:
            self.meter.request(cached=False)
            self.meter.call(usage)
            method = "hash" if self.backend.kind == "fake" else "loglik"
            best = max(options, key=lambda o: scores[o])
            result = ChoiceResult(choice=best, scores=scores, method=method)
        else:
            picked = await self.structured(prompt, choice_model(options), seed=seed, max_tokens=64)
            chosen = picked.value.choice  # type: ignore[attr-defined]
            result = ChoiceResult(
                choice=chosen,
                scores={o: float(o == chosen) for o in options},
                method="constrained",
            )
        self._cache_set(key, result.model_dump(exclude={"cached"}))
        return result

    # ---- sync wrappers ----------------------------------------------------------------------

    def generate_sync(self, prompt: PromptLike, **kwargs: Any) -> Completion:
        return run_sync(self.generate(prompt, **kwargs))

    def structured_sync(self, prompt: PromptLike, schema: type[T], **kwargs: Any) -> Structured[T]:
        return run_sync(self.structured(prompt, schema, **kwargs))

    def choose_sync(
        self, prompt: PromptLike, options: Sequence[str], **kwargs: Any
    ) -> ChoiceResult:
        return run_sync(self.choose(prompt, options, **kwargs))

    # ---- internals --------------------------------------------------------------------------

    def _key(self, kind: str, request: GenerationRequest, **extra: Any) -> str:
        return cache_key(
            {"kind": kind, **self.backend.identity(), "request": request.key_fields(), **extra}
        )

    def _cache_get(self, key: str, *, meter: bool = True) -> dict[str, Any] | None:
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None and self.dry is not None:  # asked before in this dry run
            hit = self.dry.recall(key)
        if meter:
            self.meter.request(cached=hit is not None)
        return hit

    def _cache_set(self, key: str, value: dict[str, Any]) -> None:
        if self.dry is not None:  # a stand-in is never stored: the dry run remembers it
            self.dry.remember(key, value)
        elif self.cache is not None:
            self.cache.set(key, value)

    async def _once(
        self, key: str, call: Callable[[], Awaitable[R]], *, meter: bool = True
    ) -> tuple[R, bool]:
        """`(result, shared)`: the first request of a key runs `call`; identical requests
        arriving while it is in flight await that same result (`shared`), so a backend that
        ignores seeds cannot answer one request two ways within a run. A shared answer is
        metered as a cache hit; `meter=False` leaves the first request's metering to `call`."""
        flights = self._flights.setdefault(asyncio.get_running_loop(), {})
        pending = flights.get(key)
        if pending is not None:
            self.meter.request(cached=True)
            return await asyncio.shield(pending), True
        if meter:
            self.meter.request(cached=False)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        flights[key] = future
        try:
            result = await call()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # marks it retrieved: nobody may be waiting
            raise
        else:
            future.set_result(result)
            return result, False
        finally:
            del flights[key]

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """A slot of the run's gate (if it has one), then of this client's; a wait for a
        per-minute window is metered as a rate-limit wait."""
        async with contextlib.AsyncExitStack() as stack:
            if self.session is not None and self.session.gate is not None:
                waited = await stack.enter_async_context(self.session.gate.slot())
                if waited:
                    self.meter.rate_wait(waited)
            waited = await stack.enter_async_context(self._gate.slot())
            if waited:
                self.meter.rate_wait(waited)
            yield

    def _backoff_delay(self, state: RetryCallState) -> float:
        """Exponential backoff with jitter proportional to the delay.

        tenacity's `wait_exponential_jitter` adds up to 1 s of jitter whatever the base delay,
        so a small `backoff_initial_s` would still wait about a second per retry."""
        base = min(self.backoff_max_s, self.backoff_initial_s * 2 ** (state.attempt_number - 1))
        delay = min(self.backoff_max_s, base + random.uniform(0.0, base))
        outcome = getattr(state, "outcome", None)
        error = outcome.exception() if outcome is not None else None
        asked = getattr(error, "retry_after_s", None)
        # A server that says when to come back is believed (up to max_wait_s): asking
        # sooner only earns another 429.
        return min(self.max_wait_s, max(delay, asked) if asked else delay)

    def _waiting(self, state: RetryCallState, shown: list[int]) -> None:
        """tenacity's before_sleep: count the retry and show the wait to progress displays."""
        self.meter.retry()
        outcome = getattr(state, "outcome", None)
        error = outcome.exception() if outcome is not None else None
        sleep = state.next_action.sleep if state.next_action is not None else 0.0
        reason = str(error).split(": ", 1)[0] if error is not None else "failed"
        if "rate limited" in reason or "429" in reason:
            self.meter.rate_wait(sleep)
        token = waits.begin(waits.Wait(self.model, reason, time.monotonic() + sleep,
                                       state.attempt_number + 1, self.max_retries + 1))
        shown.append(token)

    async def _call(self, request: GenerationRequest, json_schema: dict | None) -> RawCompletion:
        """One metered backend call with timeout and exponential backoff on transient errors."""

        async def timed() -> RawCompletion:
            start = time.perf_counter()
            raw = await self.backend.complete(request, json_schema)
            if not raw.usage.latency_s:
                raw.usage.latency_s = time.perf_counter() - start
            self.meter.call(raw.usage)
            return raw

        return await self._retrying(timed)

    async def _retrying(self, call: Callable[[], Awaitable[R]]) -> R:
        """Run `call` under the concurrency limit and the timeout, retrying transient errors
        with backoff; every backend call (generation or option scoring) goes through here."""
        shown: list[int] = []  # this call's wait between tries, while it runs
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._backoff_delay,
            retry=retry_if_exception_type(TransientLLMError),
            before_sleep=lambda state: self._waiting(state, shown),
            reraise=True,  # the last TransientLLMError, so the final message names its cause
        )
        tries = 0
        if self.session is not None:
            self.session.check(self.model)  # BudgetExceeded: no new call past a limit
        if not self._prepared:
            self.backend.prepare()
            self._prepared = True
        try:
            async for attempt in retrying:
                with attempt:
                    tries += 1
                    _end_waits(shown)
                    async with self._slot():
                        try:
                            timeout = self.timeout_s if self.backend.cancellable else None
                            return await asyncio.wait_for(call(), timeout)
                        except TimeoutError as exc:
                            raise TransientLLMError(
                                f"no answer within {self.timeout_s:g} s (--request-timeout)"
                            ) from exc
        except TransientLLMError as exc:
            self.meter.failure()
            raise LLMCallError(
                f"{self.model}: gave up after {tries} tries; last error: {exc}", attempts=tries
            ) from exc
        except Exception:
            self.meter.failure()
            raise
        finally:
            _end_waits(shown)
        raise AssertionError("unreachable")


def _end_waits(shown: list[int]) -> None:
    while shown:
        waits.end(shown.pop())


def _add(a: Usage, b: Usage) -> Usage:
    total = Usage(
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        cost_usd=a.cost_usd + b.cost_usd,
        priced=a.priced and b.priced,
        latency_s=a.latency_s + b.latency_s,
    )
    add_optional(total, a)
    add_optional(total, b)
    return total


def _with_feedback(request: GenerationRequest, raw: str, problems: list[str]) -> GenerationRequest:
    note = feedback_text(raw, problems)
    if request.prompt is not None:
        return request.model_copy(update={"prompt": f"{request.prompt}\n\n{note}\n"})
    return request.model_copy(
        update={
            "messages": [
                *(request.messages or []),
                Message(role="assistant", content=raw),
                Message(role="user", content=note),
            ]
        }
    )
