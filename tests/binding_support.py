"""Helpers for the binding tests: small specs, and the scripted backends of gtsteer.testing."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml

from gtsteer.binding import DialogueGame, Domain, DomainSpec, Instance, make_game, make_instance
from gtsteer.binding.game import message_seed
from gtsteer.binding.llm_instances import instances_jsonl
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


def message_seeds(game: DialogueGame) -> set[int]:
    """Every seed a message of `game`'s tree can be drawn with (all chance paths up to the reply
    limit): what a check of "solved and fresh samples never meet" compares."""
    n, first, offset = game.spec.num_players, game.first_player, game.sample_offset
    samples = [range(offset, offset + game.spec.samples_at(depth))
               for depth in range(game.reply_limit)]
    out: set[int] = set()
    for length in range(1, game.reply_limit + 1):
        speaker = (first + length - 1) % n
        out |= {message_seed(d.seed, path, speaker)
                for d in game.deals for path in itertools.product(*samples[:length])}
    return out


def write_instances(instances: list[Instance], path: Path) -> Path:
    """`instances` as the JSONL file `gtsteer instances` writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(instances_jsonl(instances), encoding="utf-8")
    return path
