"""Helpers for the binding tests: small specs and scripted backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gtsteer.binding import DialogueGame, Domain, DomainSpec, make_game, make_instance
from gtsteer.domains import load_spec, spec_from_dict
from gtsteer.llm import LLM, Backend, FakeBackend, GenerationRequest, RawCompletion

FRUIT = Path(__file__).resolve().parent.parent / "gtsteer" / "configs" / "trade_fruit_tone.yaml"


def fruit_dict() -> dict[str, Any]:
    return yaml.safe_load(FRUIT.read_text())


def fruit_spec(hooks: Domain | None = None, **update: Any) -> DomainSpec:
    """The fruit spec with fields replaced (and validated again), played by `hooks` when given
    (a test's variant of the fruit domain). Replaced `actions` keep only their own values'
    definitions (a definition must name a value of its key)."""
    data = {**load_spec(FRUIT).model_dump(), **update}
    if hooks is not None:
        data["domain"] = hooks.name
    if "actions" in update and "instruction_definitions" not in update:
        data["instruction_definitions"] = {
            k: defs for k, defs in data["instruction_definitions"].items()
            if set(defs) == {v for v in data["actions"].get(k, []) if v != "any"}
        }
    return spec_from_dict(data, "fruit spec", hooks)


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
            answer = {k: [] if v.get("type") == "array" else False for k, v in props.items()}
            return RawCompletion(text=json.dumps(answer))
        return RawCompletion(text=json.dumps(self.structured))


def scripted_game(spec: DomainSpec, backend: ScriptedBackend, index: int = 0) -> DialogueGame:
    llm = LLM("scripted", backend=backend, structured_attempts=2, max_retries=0)
    return make_game(spec, make_instance(spec, index), llm)


def walk(state: Any, visit: Any) -> None:
    """Depth-first over every history (what a solver's traversal touches)."""
    visit(state)
    if state.is_terminal():
        return
    actions = (
        [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
    )
    for a in actions:
        walk(state.child(a), visit)
