"""`fake`: a deterministic offline double so every config and test runs without a model."""

from __future__ import annotations

import json
import re
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.schema_fill import WORDS, fill, seeded_rng
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage


def _echo_words(text: str, limit: int = 8) -> list[str]:
    """The last words of the prompt (typically the instruction line and the speaker tag)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    tail = " ".join(lines[-2:]) if lines else ""
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", tail)
    return words[-limit:]


class FakeBackend(Backend):
    """Text from a hash of (prompt, seed): different prompts give different words.

    `echo = True` (a test-only subclass, with its own `kind` so its answers never share cache
    entries with the fake's) appends the prompt's last words, like a model that copies the
    private instruction line into its message."""

    kind = "fake"
    max_concurrency = 64
    supports_grammar = True
    echo = False

    def __init__(self, model: str = "fake"):
        super().__init__(model)

    def identity(self) -> dict[str, Any]:
        # Whether it echoes changes every answer: responses cached before echoing became opt-in
        # (or by an echoing variant) must never be served to the other.
        return {**super().identity(), "echo": self.echo}

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        text = request.as_text()
        rng = seeded_rng(self.model, text, request.seed, request.temperature, json_schema)
        if json_schema is not None:
            out = json.dumps(fill(json_schema, rng))
        else:
            n = min(request.max_tokens, rng.randint(6, 14))
            words = [rng.choice(WORDS) for _ in range(n)]
            if self.echo:
                words += _echo_words(text)
            out = " ".join(words[: request.max_tokens]).capitalize() + "."
            for stop in request.stop:
                if stop and stop in out:
                    out = out.split(stop)[0]
        usage = Usage(prompt_tokens=len(text.split()), completion_tokens=len(out.split()))
        return RawCompletion(text=out, usage=usage)

    def capabilities(self) -> dict[str, str | None]:
        return {"structured_output": "grammar", "choice": "hash"}

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        text = request.as_text()
        return {o: -1.0 - 5.0 * seeded_rng(self.model, text, request.seed, o).random()
                for o in options}
