"""Growing a game's action set at run time (PSRO adds LLM-proposed instructions).

The new game shares the old one's instance and model and starts with a copy of its in-memory
node tables: old action ids are unchanged (see `DomainSpec.with_added_instruction`), so every
history it already knows means the same thing and costs no request, and only branches that
involve the new instruction ever reach the model.
"""

from __future__ import annotations

from gtsteer.binding.game import DialogueGame
from gtsteer.binding.loader import make_game


def grow_game(game: DialogueGame, key: str, value: str) -> DialogueGame:
    """`game` with `value` appended to instruction set `key` (ConfigError if it is invalid)."""
    spec = game.spec.with_added_instruction(key, value)
    params = game.get_parameters()
    grown = make_game(spec, game.instance, game.llm, config=str(params.get("config", "")),
                      seed=int(params.get("seed", 0)))  # fmt: skip
    grown.messages.update(game.messages)
    grown.terminations.update(game.terminations)
    grown.rewards.update(game.rewards)
    return grown
