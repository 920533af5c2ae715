"""Information isolation: a player's view holds what that player may know, nothing more."""

from __future__ import annotations

import pyspiel

from gtsteer.binding.game import DialogueGame, DialogueState
from gtsteer.binding.prompts import (
    contains_instruction,
    echo_patterns,
    instruction_parts,
    render_private_info,
)
from gtsteer.checks.errors import fail
from gtsteer.checks.pyspiel_api import walk


def isolation_check(game: DialogueGame, name: str = "<game>") -> int:
    """Over every history: each player sees its own private info and no other player's, and
    no instruction is shown to anyone but its speaker, nor left in a message. Returns the
    number of distinct decision-node information states; raises `ConformanceError`."""
    info_states: set[str] = set()

    def visit(state: pyspiel.State) -> None:
        if not isinstance(state, DialogueState):
            raise fail(name, "DialogueState", f"a {type(state).__name__} in the tree")
        if not state.is_terminal() and not state.is_chance_node():
            info_states.add(state.information_state_string())
        _check_views(game, state, name)

    walk(game.new_initial_state(), visit)
    return len(info_states)


def _check_views(game: DialogueGame, state: DialogueState, name: str) -> None:
    """Own private info in, others' out; no instruction shown to anyone but its speaker."""
    if state.deal is None:
        return
    deal = game.deals[state.deal]
    names = game.instance.names
    for player in range(game.num_players()):
        view = state.information_state_string(player)
        own = render_private_info(deal.private_info[player])
        if own and own not in view:
            raise fail(name, "private info", f"player {player} does not see its own info")
        for other in range(game.num_players()):
            theirs = render_private_info(deal.private_info[other])
            if other != player and theirs and theirs != own and theirs in view:
                raise fail(name, "private info", f"player {player} sees player {other}'s")
        for turn in state.turns:
            if turn.instruction is None:
                continue
            patterns = echo_patterns(game.spec, turn.instruction)
            if contains_instruction(turn.text, patterns):
                raise fail(name, "no instruction echo", f"{turn.text!r} carries an instruction")
            parts = instruction_parts(game.spec, turn.instruction, names[turn.speaker])
            tag = f"{names[turn.speaker]} ({turn.instruction})"
            if turn.speaker != player and (tag in view or any(part in view for part in parts)):
                raise fail(name, "no instruction echo", f"player {player} sees {parts or tag}")
