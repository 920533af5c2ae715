"""Growing a game's action set at run time (PSRO adds LLM-proposed instructions).

The new game shares the old one's instance, model and sample offset and starts with a copy of
every in-memory node table (messages, echoes, end checks, a verdict game's verdicts, rewards):
old action ids are unchanged (see `DomainSpec.with_added_instruction`), so every history it
already knows means the same thing and costs no request, and only branches that involve the
new instruction ever reach the model.
"""

from __future__ import annotations

from gtsteer.binding.game import DialogueGame
from gtsteer.binding.loader import make_game


def grow_game(game: DialogueGame, key: str, value: str) -> DialogueGame:
    """`game` with `value` appended to instruction set `key` (ConfigError if it is invalid)."""
    spec = game.spec.with_added_instruction(key, value)
    params = game.get_parameters()
    grown = make_game(spec, game.instance, game.llm, config=str(params.get("config", "")),
                      seed=int(params.get("seed", 0)), sample_offset=game.sample_offset)
    grown.messages.update(game.messages)
    grown.echoes.update(game.echoes)
    grown.terminations.update(game.terminations)
    # a judged history's verdict decides its reward: without it a grown verdict game would
    # score a terminal it already knows as if the judge had said nothing
    grown.verdicts.update(game.verdicts)
    grown.rewards.update(game.rewards)
    return grown
