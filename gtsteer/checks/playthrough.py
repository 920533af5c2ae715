"""Recorded playthroughs, as OpenSpiel writes them (`generate_playthrough`): one full game as
text, whose header names what built the game and whose `action:` lines are its own input.

`playthrough(game, header)` records a game (`dialogue_playthrough(game, config)` a dialogue
game, its header naming the config by the path it replays from), choosing chance outcomes by
their probabilities and player actions uniformly from `seed`. `replay(text, game)` plays the
recorded actions again, read back from the file, and returns the text they produce now: a
change to a prompt, a message or a legal action shows as a local diff at the step it touches,
instead of a new random trajectory. Byte-identical for identical inputs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence

import pyspiel
from pydantic import BaseModel

from gtsteer.binding.game import DialogueGame

#: The first line of every playthrough file.
MAGIC = "# gtsteer playthrough: replayed by gtsteer.checks.replay from its `action:` lines"


class Playthrough(BaseModel):
    """A parsed file: its header fields (`game`, `config`, `params`, `model`, ...) and the
    actions it took, in order."""

    header: dict[str, str]
    actions: list[int]

    def params(self) -> dict:
        """The game's parameters, as the header's `params:` line holds them (JSON)."""
        return json.loads(self.header.get("params", "{}"))


def playthrough(
    game: pyspiel.Game,
    header: Mapping[str, str],
    *,
    seed: int = 0,
    actions: Sequence[int] | None = None,
) -> str:
    """One full game as text: `header` (which should name config, params and model), then
    every state, each player's information state and observation, the legal actions, the
    action taken and the returns. With `actions` the game follows them (a replay): an action
    that is no longer legal, or a recording that ends early, is written down and ends the text."""
    rng = random.Random(seed)
    lines = [MAGIC, f"game: {game.get_type().short_name}"]
    lines += [f"{key}: {value}" for key, value in header.items()]
    lines += [
        (f"players: {game.num_players()} · distinct actions: {game.num_distinct_actions()} ·"
         f" max chance outcomes: {game.max_chance_outcomes()}"),
        f"utility range: [{game.min_utility():g}, {game.max_utility():g}]",
        "",
    ]
    state = game.new_initial_state()
    step = 0
    while True:
        lines.append(f"# history: {state.history()}")
        lines.append("state:")
        lines += [f"  {ln}" for ln in str(state).splitlines()]
        if state.is_terminal():
            lines.append(f"returns: {[round(r, 6) for r in state.returns()]}")
            break
        for p in range(game.num_players()):
            lines.append(f"information state {p}:")
            lines += [f"  {ln}" for ln in state.information_state_string(p).splitlines()]
            lines.append(f"observation {p}:")
            lines += [f"  {ln}" for ln in state.observation_string(p).splitlines()]
        player = state.current_player()
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            lines.append(f"chance outcomes: {[(a, round(p, 6)) for a, p in outcomes]}")
            legal = [a for a, _ in outcomes]
            drawn = rng.choices(legal, [p for _, p in outcomes])[0]
        else:
            legal = state.legal_actions()
            lines.append(f"current player: {player}")
            named = [(a, state.action_to_string(player, a)) for a in legal]
            lines.append(f"legal actions: {named}")
            drawn = rng.choice(legal)
        if actions is None:
            action = drawn
        elif step >= len(actions):
            lines.append("# the recording ends here, before the game does")
            break
        else:
            action = actions[step]
            if action not in legal:
                lines.append(f"action: {action} (not legal here any more)")
                break
        lines.append(f"action: {action} ({state.action_to_string(player, action)})")
        lines.append("")
        state.apply_action(action)
        step += 1
    return "\n".join(lines) + "\n"


def dialogue_playthrough(game: DialogueGame, config: str, *, seed: int = 0) -> str:
    """The playthrough of a dialogue game built from the config at `config` (a path as the
    replaying side reads it: relative to the repository for its own configs, any path for an
    author's; `gtsteer.domains.game_from_params(read_playthrough(text).params())` rebuilds the
    game). The header names the config, model, parameters, domain and instance."""
    params = {k: v for k, v in game.get_parameters().items() if k != "key"}
    params["config"] = config  # the live key and the path loaded from say nothing to a reader
    header = {"config": config, "model": str(params["llm"]),
              "params": json.dumps(params, sort_keys=True),
              "domain": game.spec.domain or "(none)", "instance": game.instance.model_dump_json()}
    return playthrough(game, header, seed=seed)


def read_playthrough(text: str) -> Playthrough:
    """The header and the `action:` lines of a recorded playthrough (OpenSpiel's
    `_read_playthrough`). The header runs from the first line to the first blank one."""
    lines = text.splitlines()
    if not lines or lines[0] != MAGIC:
        raise ValueError("not a gtsteer playthrough (first line is not the playthrough marker)")
    header: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            break
        key, sep, value = line.partition(": ")
        if sep:
            header[key] = value
    actions = [int(line.split()[1]) for line in lines if line.startswith("action: ")]
    return Playthrough(header=header, actions=actions)


def replay(text: str, game: pyspiel.Game) -> str:
    """The playthrough that `text`'s recorded actions produce on `game` today, with `text`'s
    own header (minus what `playthrough` writes itself); equal to `text` when nothing changed."""
    recorded = read_playthrough(text)
    own = {"game", "players", "utility range"}
    header = {k: v for k, v in recorded.header.items() if k not in own}
    return playthrough(game, header, actions=recorded.actions)
