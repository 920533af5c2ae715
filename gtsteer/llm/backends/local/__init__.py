"""`local`: llama.cpp in-process (llama-cpp-python) on a GGUF file.

Model strings: `local` (the default embedded model, `DEFAULT_LOCAL_MODEL`), `local:gemma3-270m`
(Gemma 3 270M, a base model), `local:smollm2-135m` (SmolLM2-135M-Instruct, a chat model) or
`local:/path/model.gguf` (a chat model when its GGUF carries a chat template). Base models read
the prompt as text to continue; chat models read it as the user's turn of their chat template.

Every prompt is evaluated in fixed token blocks through `BlockPrefixCache`, which restores the
longest already-computed block prefix, so the same inputs give the same output whatever ran
before, with or without reuse. Requests queue on the one llama.cpp context in
`PrefixOrderedQueue`, which serves them one at a time, those sharing a prefix one after
another. Structured output is constrained by llama.cpp's JSON-schema grammar, checked first
against the sampled token only (see `sampling`).

One job per module, each importing only the siblings docs/DESIGN.md ("The local backend") lets
it; code outside the package imports the names below, never its modules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.backends.local import serial
from gtsteer.llm.backends.local.engine import (
    LlamaEngine,
    close_engines,
    counting_tokens,
    engine_for,
    engine_stats,
)
from gtsteer.llm.backends.local.models import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    default_model_path,
    parse_local_model,
)
from gtsteer.llm.backends.local.prefix_cache import BLOCK, CACHE_MB_ENV, cache_bytes_from_env
from gtsteer.llm.backends.local.threads import THREADS_ENV, local_threads
from gtsteer.llm.errors import MissingExtraError
from gtsteer.llm.extras import installed
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

DEFAULT_CTX = 4096
CTX_ENV = "GTSTEER_LOCAL_CTX"

__all__ = [
    "BLOCK",
    "CACHE_MB_ENV",
    "DEFAULT_LOCAL_MODEL",
    "EMBEDDED_MODELS",
    "THREADS_ENV",
    "LlamaEngine",
    "LocalBackend",
    "cache_bytes_from_env",
    "close_engines",
    "counting_tokens",
    "default_model_path",
    "engine_stats",
    "local_threads",
    "parse_local_model",
]


class LocalBackend(Backend):
    kind = "local"
    # Requests wait in the engine's prefix-ordered queue (one llama.cpp context serves one at a
    # time); letting many in at once is what lets the queue group those sharing a prefix.
    max_concurrency = 256
    supports_grammar = True
    cancellable = False  # a llama.cpp call in a worker thread cannot be stopped

    def __init__(
        self,
        model: str = "local",
        *,
        prefix_cache_mb: float | None = None,
        threads: int | None = None,
    ):
        super().__init__(model)
        if not installed("llama_cpp"):  # refused here, before a run builds anything
            raise MissingExtraError(
                "local", f"--llm {model} (the embedded model; `local` is the default --llm)",
                ", or pass --llm with a served or API model (e.g. openai/gpt-4o-mini) or fake")
        self.choice = parse_local_model(model)
        self.n_ctx = int(os.environ.get(CTX_ENV, DEFAULT_CTX))
        self.threads = threads or local_threads()
        self.cache_bytes = (
            cache_bytes_from_env() if prefix_cache_mb is None else int(prefix_cache_mb * 2**20)
        )

    @property
    def path(self) -> Path | None:
        return self.choice.path

    def engine(self) -> LlamaEngine:
        path = self.choice.resolve_path()  # assembling the Gemma GGUF takes a few seconds
        return engine_for(path, self.n_ctx, self.threads, self.cache_bytes, self.choice.chat)

    def llama(self) -> Any:
        return self.engine().llm

    @property
    def chat(self) -> bool:
        if self.choice.chat is None:  # a user GGUF: decided by its metadata
            self.choice.chat = self.engine().chat
        return self.choice.chat

    def identity(self) -> dict[str, Any]:
        """What the response-cache key holds of this backend. Building it loads no model for
        an embedded one (its prompting kind is known): a rerun whose answers are all cached
        never touches llama.cpp."""
        return {
            "backend": self.kind,
            "model": self.choice.label,
            "prompting": "chat" if self.chat else "completion",
            "eval": f"blocks{BLOCK}",  # the batch split fixes the logits' low bits
        }

    def render(self, request: GenerationRequest) -> str:
        """The exact text the model reads for `request` (chat template applied for chat models)."""
        return self.engine().render(request)

    def context_window(self) -> int | None:
        return self.n_ctx

    def count_tokens(self, request: GenerationRequest) -> int | None:
        engine = self.engine()
        return len(engine.tokens(engine.render(request)))

    async def _prepared(self, request: GenerationRequest) -> tuple[LlamaEngine, str]:
        import asyncio

        engine = await asyncio.to_thread(self.engine)  # loads the model on first use
        return engine, engine.render(request)

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        engine, text = await self._prepared(request)
        return await engine.queue.run(
            text, lambda: serial.complete(engine, text, request, json_schema)
        )

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        engine, text = await self._prepared(request)
        return await engine.queue.run(text, lambda: serial.score(engine, text, options))

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        scores, _ = await self.score_options_with_usage(request, options)
        return scores
