"""The backend contract: one raw call, no caching, no retries (the client adds those)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage


class Backend(ABC):
    kind: str = "abstract"
    #: Requests this backend can serve at once; an in-process model serves one.
    max_concurrency: int = 8
    #: True when structured output is constrained by a grammar (valid by construction).
    supports_grammar: bool = False
    #: False when a call cannot be abandoned (in-process compute): a timeout would leave it
    #: running and a retry would queue a second copy behind it, so the client waits instead.
    cancellable: bool = True

    def __init__(self, model: str):
        self.model = model

    def capabilities(self) -> dict[str, str | None]:
        """How structured output and `choose` are served here (recorded in run summaries);
        None where a served endpoint has not been asked yet."""
        choice = "loglik" if type(self).score_options is not Backend.score_options else None
        return {
            "structured_output": "grammar" if self.supports_grammar else "prompt",
            "choice": choice or "constrained",
        }

    def identity(self) -> dict[str, Any]:
        """What identifies this backend's answers in the cache key (never a secret)."""
        return {"backend": self.kind, "model": self.model}

    @abstractmethod
    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        """Generate once. With `json_schema`, return JSON text meant to match it."""

    def prepare(self) -> None:
        """Do once, before a first call takes its slot, what that call would otherwise do
        inside it (a lazy import of seconds): a request's start, which `--rpm` spaces, is then
        when it is sent."""
        return None  # most backends have nothing to do

    def context_window(self) -> int | None:
        """Tokens the model attends to, prompt and answer together; None where unknown
        (API models, whose windows dwarf these prompts)."""
        return None

    def price(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for a call of these sizes (a dry run's estimate); None where unknown. An
        in-process or fake model costs nothing."""
        return 0.0

    def estimate_tokens(self, text: str, request: GenerationRequest | None = None) -> int | None:
        """Tokens of `text` (or `request`, as sent) by a tokenizer at hand without loading a
        model (a dry run's estimate); None: the caller's rule of thumb."""
        return None

    def count_tokens(self, request: GenerationRequest) -> int | None:
        """Tokens `request` takes as the model reads it (chat template applied); None where
        the backend cannot tell."""
        return None

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        """Log-likelihood of each option as the continuation; None if the backend can't."""
        return None

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        """`score_options` plus the tokens it cost (zero where the backend does not count)."""
        return await self.score_options(request, options), Usage()
