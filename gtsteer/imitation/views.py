"""What the distilled policy sees of a dialogue decision: a text view and structured features.

The text view says the same as the solver's information-state key (own private info, the public
transcript, own past instructions) but is written for an embedder, which truncates (MiniLM
reads 256 word pieces): who is deciding and where in the dialogue comes first, then the private
facts, then own past instructions, then the messages newest first. The scenario, identical in
every instance of a domain, is left out. Example:

    Alice (proposer, player 0) chooses an instruction: decision 1 of 1, after 0 messages.
    Alice's private information: fruits owned: apple: 2, ...; fruit values: apple: 5, ...
    Alice's past instructions: none.
    Messages, newest first:
    (none yet)

Features: one-hot of the message index (0..reply_limit-1), one-hot of each own earlier
instruction (num_max_replies - 1 slots x instructions), then the domain's private features.
"""

from __future__ import annotations

from typing import Any

from gtsteer.binding.features import private_features
from gtsteer.binding.game import DialogueGame, DialogueState
from gtsteer.binding.instances import Instance


def _instance(state: DialogueState) -> Instance:
    """The instance whose private information this state was dealt (dealt games have several)."""
    game: DialogueGame = state.get_game()
    deals, deal = getattr(game, "deals", None), getattr(state, "deal", None)
    return deals[deal] if deals and deal is not None else game.instance


def own_instructions(state: DialogueState, player: int) -> list[str]:
    return [t.instruction for t in state.turns if t.speaker == player and t.instruction is not None]


def text_view(state: DialogueState, player: int) -> str:
    """The situation-first text of `player`'s information state (see the module docstring)."""
    game: DialogueGame = state.get_game()
    spec = game.spec
    inst = _instance(state)
    name = inst.names[player]
    mine = own_instructions(state, player)
    info = "; ".join(
        f"{key.replace('_', ' ')}: {value}" for key, value in inst.private_info[player].items()
    )
    head = (
        f"{name} ({spec.players[player]}, player {player}) chooses an instruction: "
        f"decision {len(mine) + 1} of {spec.num_max_replies}, after {state.replies} "
        f"message{'' if state.replies == 1 else 's'}."
    )
    lines = [
        head,
        f"{name}'s private information: {info or 'none'}.",
        f"{name}'s past instructions: {', '.join(mine) if mine else 'none'}.",
        "Messages, newest first:",
    ]
    lines += [f"{inst.names[t.speaker]}: {t.text}" for t in reversed(state.turns)] or ["(none yet)"]
    return "\n".join(lines)


def features(state: DialogueState, player: int) -> list[float]:
    """Message-index one-hot, own-earlier-instruction one-hots, domain private features."""
    game: DialogueGame = state.get_game()
    spec = game.spec
    labels = game.instructions(player)
    turn = [0.0] * game.reply_limit
    turn[min(state.replies, game.reply_limit - 1)] = 1.0
    slots = max(spec.num_max_replies - 1, 0)
    past = [0.0] * (slots * len(labels))
    for slot, instruction in enumerate(own_instructions(state, player)[:slots]):
        past[slot * len(labels) + labels.index(instruction)] = 1.0
    return turn + past + private_features(spec, _instance(state).private_info[player])


def decision_metadata(state: DialogueState, player: int) -> dict[str, Any]:
    return {"replies": state.replies, "own_decisions": len(own_instructions(state, player))}
