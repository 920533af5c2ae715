"""One place where the werewolf package calls a model, so every request is recorded.

Each call yields a `CallRecord` (bot, purpose, model, the exact prompt text, the raw answer,
usage, cache hit, attempts, error) that the runner stores in the same transaction as the step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from gtsteer.llm import LLM, Message, StructuredOutputError
from gtsteer.llm.types import render_messages

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
    extra: dict[str, Any] = Field(default_factory=dict)


class LLMPool:
    """One `LLM` per model string (mixed-model games), or a factory tests can replace."""

    def __init__(self, factory: Callable[[str], LLM] | None = None):
        self.factory = factory or (lambda model: LLM(model))
        self._llms: dict[str, LLM] = {}

    def get(self, model: str) -> LLM:
        if model not in self._llms:
            self._llms[model] = self.factory(model)
        return self._llms[model]

    def completion_style(self, model: str) -> bool:
        """Base models (the local backend) read a transcript rather than chat messages."""
        return self.get(model).backend.kind == "local"


def prompt_text(prompt: str | list[Message]) -> str:
    return prompt if isinstance(prompt, str) else render_messages(prompt)


def call_text(
    pool: LLMPool, model: str, prompt: str | list[Message], *, bot: str, purpose: str,
    seed: int, max_tokens: int, temperature: float = 0.8, stop: list[str] | None = None,
) -> tuple[str, CallRecord]:
    llm = pool.get(model)
    out = llm.generate_sync(prompt, seed=seed, temperature=temperature, max_tokens=max_tokens,
                            stop=stop)
    rec = CallRecord(
        bot=bot, purpose=purpose, model=model, prompt=prompt_text(prompt), response=out.text,
        seed=seed, cached=out.cached, prompt_tokens=out.usage.prompt_tokens,
        completion_tokens=out.usage.completion_tokens, latency_s=out.usage.latency_s,
    )
    return out.text, rec


def call_structured(
    pool: LLMPool, model: str, prompt: str | list[Message], schema: type[T], *, bot: str,
    purpose: str, seed: int, max_tokens: int, temperature: float = 0.3,
) -> tuple[T | None, CallRecord]:
    """A validated object, or None with the error recorded (the caller applies its fallback)."""
    llm = pool.get(model)
    try:
        out = llm.structured_sync(prompt, schema, seed=seed, temperature=temperature,
                                  max_tokens=max_tokens)
    except StructuredOutputError as exc:
        rec = CallRecord(
            bot=bot, purpose=purpose, model=model, prompt=prompt_text(prompt),
            response=exc.last_raw, seed=seed, attempts=exc.attempts,
            error="; ".join(exc.problems) or str(exc),
        )
        return None, rec
    rec = CallRecord(
        bot=bot, purpose=purpose, model=model, prompt=prompt_text(prompt), response=out.raw,
        seed=seed, cached=out.cached, attempts=out.attempts,
        prompt_tokens=out.usage.prompt_tokens, completion_tokens=out.usage.completion_tokens,
        latency_s=out.usage.latency_s,
    )
    return out.value, rec
