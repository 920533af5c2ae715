"""One place where the werewolf package calls a model, so every request is recorded.

Each call yields a `CallRecord` stored in the step's transaction; its `sent` holds every request
text that reached the backend (retries and schema hints included), so a game can be audited from
its database alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from gtsteer.llm import (
    LLM,
    Backend,
    ChoiceResult,
    Message,
    PromptTooLongError,
    StructuredOutputError,
    as_llm,
)
from gtsteer.llm.types import GenerationRequest, RawCompletion, render_messages

T = TypeVar("T", bound=BaseModel)


class CallRecord(BaseModel):
    bot: str
    purpose: str
    model: str
    prompt: str
    response: str
    seed: int
    cached: bool = False
    attempts: int = 1
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None
    #: Every request text that reached the backend for this call (empty on a cache hit).
    sent: list[str] = Field(default_factory=list)
    day: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class RecordingBackend(Backend):
    """Passes every call through to `inner` (identity included, so cache keys are unchanged)
    and keeps the request text it was given."""

    def __init__(self, inner: Backend):
        super().__init__(inner.model)
        self.inner = inner
        self.kind = inner.kind
        self.max_concurrency = inner.max_concurrency
        self.supports_grammar = inner.supports_grammar
        self.cancellable = inner.cancellable
        self.sent: list[str] = []

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        self.sent.append(request.as_text())
        return await self.inner.complete(request, json_schema)

    async def score_options(self, request: GenerationRequest,
                            options: list[str]) -> dict[str, float] | None:
        self.sent.append(request.as_text())
        return await self.inner.score_options(request, options)

    async def score_options_with_usage(self, request: GenerationRequest, options: list[str]):
        self.sent.append(request.as_text())
        return await self.inner.score_options_with_usage(request, options)

    def context_window(self) -> int | None:
        return self.inner.context_window()

    def count_tokens(self, request: GenerationRequest) -> int | None:
        return self.inner.count_tokens(request)

    def __getattr__(self, name: str) -> Any:
        """Anything else a backend offers (e.g. the local backend's `chat`, `render`)."""
        return getattr(self.inner, name)

    def take(self) -> list[str]:
        out, self.sent = self.sent, []
        return out


class LLMPool:
    """One `LLM` per model string (mixed-model games). `completion_style` forces the transcript
    (base-model) prompt form on or off (by default only local base models get it)."""

    def __init__(self, factory: Callable[[str], LLM] | None = None,
                 completion_style: bool | None = None):
        self.factory = factory or as_llm
        self.force_completion = completion_style
        self._llms: dict[str, LLM] = {}

    def get(self, model: str) -> LLM:
        if model not in self._llms:
            llm = self.factory(model)
            if not isinstance(llm.backend, RecordingBackend):
                llm.backend = RecordingBackend(llm.backend)
            self._llms[model] = llm
        return self._llms[model]

    def sent(self, model: str) -> list[str]:
        """The requests that reached `model`'s backend since the last call to `sent`."""
        backend = self.get(model).backend
        return backend.take() if isinstance(backend, RecordingBackend) else []

    def completion_style(self, model: str) -> bool:
        """Embedded base models read a transcript; chat models (API models, and embedded chat
        models, whose backend applies the chat template) read chat messages."""
        if self.force_completion is not None:
            return self.force_completion
        backend = self.get(model).backend
        return backend.kind == "local" and not getattr(backend, "chat", False)

    def small(self, model: str) -> bool:
        """An embedded (in-process) model: tight token budgets and short fields."""
        return self.get(model).backend.kind == "local"

    def fits(self, model: str, prompt: str | list[Message], reserve: int) -> bool:
        """Whether `prompt` leaves `reserve` tokens of `model`'s context for the answer (always
        True where the backend knows no limit)."""
        backend = self.get(model).backend
        window = backend.context_window()
        if window is None:
            return True
        request = (GenerationRequest(prompt=prompt) if isinstance(prompt, str)
                   else GenerationRequest(messages=prompt))
        used = backend.count_tokens(request)
        return used is None or used + reserve <= window


def prompt_text(prompt: str | list[Message]) -> str:
    return prompt if isinstance(prompt, str) else render_messages(prompt)


def _record(pool: LLMPool, model: str, prompt: str | list[Message], **fields: Any) -> CallRecord:
    return CallRecord(model=model, prompt=prompt_text(prompt), sent=pool.sent(model), **fields)


def _failed(exc: StructuredOutputError | PromptTooLongError, pool: LLMPool, model: str,
            prompt: str | list[Message], **who: Any) -> CallRecord:
    """The record of a call whose answer never validated, or whose retry with feedback outgrew
    the context the guard made room for: the caller applies its fallback, the game goes on."""
    if isinstance(exc, PromptTooLongError):
        return _record(pool, model, prompt, response="", error=f"PromptTooLongError: {exc}",
                       **who)
    return _record(pool, model, prompt, response=exc.last_raw, attempts=exc.attempts,
                   error="; ".join(exc.problems) or str(exc), **who)


def call_text(
    pool: LLMPool, model: str, prompt: str | list[Message], *, bot: str, purpose: str,
    seed: int, max_tokens: int, temperature: float = 0.8, stop: list[str] | None = None,
) -> tuple[str, CallRecord]:
    llm = pool.get(model)
    pool.sent(model)
    out = llm.generate_sync(prompt, seed=seed, temperature=temperature, max_tokens=max_tokens,
                            stop=stop)
    return out.text, _record(
        pool, model, prompt, bot=bot, purpose=purpose, response=out.text, seed=seed,
        cached=out.cached, prompt_tokens=out.usage.prompt_tokens,
        completion_tokens=out.usage.completion_tokens, latency_s=out.usage.latency_s)


def call_choice(
    pool: LLMPool, model: str, prompt: str | list[Message], options: list[str], *, bot: str,
    purpose: str, seed: int,
) -> tuple[ChoiceResult | None, CallRecord]:
    """Scores (log-likelihood, or the backend's constrained pick) of each option; None with the
    error recorded when the choice never validated."""
    llm = pool.get(model)
    pool.sent(model)
    try:
        out = llm.choose_sync(prompt, options, seed=seed)
    except (StructuredOutputError, PromptTooLongError) as exc:
        return None, _failed(exc, pool, model, prompt, bot=bot, purpose=purpose, seed=seed)
    return out, _record(pool, model, prompt, bot=bot, purpose=purpose, seed=seed,
                        response=out.model_dump_json(exclude={"cached"}), cached=out.cached)


def call_structured(
    pool: LLMPool, model: str, prompt: str | list[Message], schema: type[T], *, bot: str,
    purpose: str, seed: int, max_tokens: int, temperature: float = 0.3,
) -> tuple[T | None, CallRecord]:
    """A validated object, or None with the error recorded (the caller applies its fallback)."""
    llm = pool.get(model)
    pool.sent(model)
    try:
        out = llm.structured_sync(prompt, schema, seed=seed, temperature=temperature,
                                  max_tokens=max_tokens)
    except (StructuredOutputError, PromptTooLongError) as exc:
        return None, _failed(exc, pool, model, prompt, bot=bot, purpose=purpose, seed=seed)
    return out.value, _record(
        pool, model, prompt, bot=bot, purpose=purpose, response=out.raw, seed=seed,
        cached=out.cached, attempts=out.attempts, prompt_tokens=out.usage.prompt_tokens,
        completion_tokens=out.usage.completion_tokens, latency_s=out.usage.latency_s)
