"""Scripted backends for tests of games and drivers: answers fixed in advance, so a test reads
exactly what a model said and how often it was asked (`LLM(name, backend=...)`)."""

from __future__ import annotations

import json
from typing import Any

from gtsteer.llm import Backend, FakeBackend, GenerationRequest, RawCompletion


class EchoingFake(FakeBackend):
    """The fake, copying the prompt's last lines (the private instruction) into its text."""

    kind = "fake-echo"
    echo = True


class ScriptedBackend(Backend):
    """Messages that ignore the prompt (so transcripts do not reveal instructions) and a fixed
    structured answer (or an invalid one, to exercise failures)."""

    kind = "scripted"
    max_concurrency = 16
    supports_grammar = True

    def __init__(self, structured: dict[str, Any] | str | None = None, text: str = "Hello."):
        super().__init__("scripted")
        self.structured = structured
        self.text = text
        self.calls = 0

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        self.calls += 1
        if json_schema is None:
            return RawCompletion(text=f"{self.text} (sample {request.seed % 1000})")
        if isinstance(self.structured, str):
            return RawCompletion(text=self.structured)
        if self.structured is None:  # "no deal": false for booleans, empty lists
            props = json_schema.get("properties", {})
            answer: dict[str, Any] = {k: [] if v.get("type") == "array" else False
                                      for k, v in props.items()}
            return RawCompletion(text=json.dumps(answer))
        return RawCompletion(text=json.dumps(self.structured))
