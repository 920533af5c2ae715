"""Value types that cross the LLM-layer boundary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, model_validator

T = TypeVar("T", bound=BaseModel)


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class GenerationRequest(BaseModel):
    """Everything that changes a generation's answer; hashed into the cache key."""

    prompt: str | None = None
    messages: list[Message] | None = None
    seed: int = 0
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(128, ge=1, le=8192)
    stop: list[str] = Field(default_factory=list)
    #: The name of `decided`'s rule (hashed; None, the default, leaves the key as it was).
    end_rule: str | None = None
    #: Generation may end once this says yes to the text so far: the caller's cleaning would
    #: discard the rest (a backend without a token loop of its own ignores it). Not hashed:
    #: `end_rule` names it.
    decided: Callable[[str], bool] | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _one_input(self) -> GenerationRequest:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of `prompt` or `messages`")
        if (self.end_rule is None) != (self.decided is None):
            raise ValueError("give `end_rule` and `decided` together (the rule's name is hashed)")
        return self

    def key_fields(self) -> dict[str, Any]:
        """What the cache key hashes: every field that changes the answer (`end_rule` only when
        set, so requests without one keep their keys)."""
        return self.model_dump(exclude=None if self.end_rule else {"end_rule"})

    def with_note(self, note: str) -> GenerationRequest:
        """This request with `note` after its prompt, or as a user turn after its messages."""
        if self.prompt is not None:
            return self.model_copy(update={"prompt": f"{self.prompt}\n\n{note}"})
        return self.model_copy(
            update={"messages": [*(self.messages or []), Message(role="user", content=note)]})

    def as_text(self) -> str:
        """Completion-style rendering, used by base models and the fake backend."""
        if self.prompt is not None:
            return self.prompt
        return render_messages(self.messages or [])


def render_messages(messages: list[Message]) -> str:
    """Render chat messages as a plain transcript a base model can continue."""
    parts = []
    for m in messages:
        label = {"system": "Instructions", "user": "User", "assistant": "Assistant"}[m.role]
        parts.append(f"{label}: {m.content.strip()}")
    parts.append("Assistant:")
    return "\n\n".join(parts)


class Usage(BaseModel):
    prompt_tokens: int = 0
    #: Prompt tokens the model really evaluated (the local backend reuses cached prefixes);
    #: None where the backend cannot tell.
    prompt_tokens_evaluated: int | None = None
    #: Tokens (prompt and generated) no earlier call had computed as a prefix: what any way
    #: of serving the same calls must evaluate. None unless the local backend counts them.
    tokens_novel: int | None = None
    #: Of those, the generated ones (evaluated one decode per token of a sequence).
    tokens_novel_generated: int | None = None
    #: Prompt tokens an unbounded block cache would have evaluated: the fewest that give the
    #: same answers bit for bit when prompts load in blocks and then their last token (counted
    #: with `tokens_novel`). A completion's last prompt token is left out: it is one of the
    #: single-token decodes that `completion_tokens` counts.
    prompt_tokens_block_floor: int | None = None
    completion_tokens: int = 0
    cost_usd: float = 0.0
    #: False where litellm's cost map has no price for the model (`cost_usd` is then 0 but
    #: unknown, never a real zero).
    priced: bool = True
    latency_s: float = 0.0


class RawCompletion(BaseModel):
    """What a backend returns for one call (before caching and metering)."""

    text: str
    usage: Usage = Field(default_factory=Usage)


class Completion(BaseModel):
    text: str
    cached: bool
    usage: Usage


class Structured(BaseModel, Generic[T]):
    value: T
    raw: str
    cached: bool
    attempts: int
    usage: Usage


class ChoiceResult(BaseModel):
    choice: str
    scores: dict[str, float]
    method: Literal["loglik", "constrained", "hash"]
    cached: bool = False
