"""Helpers for the binding tests: small specs, and the scripted backends of gtsteer.testing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gtsteer.binding import DialogueGame, Domain, DomainSpec, make_game, make_instance
from gtsteer.domains import load_spec, spec_from_dict
from gtsteer.llm import LLM
from gtsteer.testing import ScriptedBackend

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
