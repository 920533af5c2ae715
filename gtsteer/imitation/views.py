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

Both are built from a `Dialogue` (the decision as its speaker knows it) by `decision_input`,
the one function behind the dataset's records and the live `Advisor`; `dialogue_of` reads the
`Dialogue` of a game state.
"""

from __future__ import annotations

from typing import Any

from gtsteer.binding.features import private_features
from gtsteer.binding.game import DialogueGame, DialogueState
from gtsteer.binding.instances import Instance
from gtsteer.binding.spec import DomainSpec
from gtsteer.imitation.dialogue import Dialogue, Line
from gtsteer.imitation.policy import PolicyInput


def _instance(state: DialogueState) -> Instance:
    """The instance whose private information this state was dealt (dealt games have several)."""
    game: DialogueGame = state.get_game()
    deals, deal = getattr(game, "deals", None), getattr(state, "deal", None)
    return deals[deal] if deals and deal is not None else game.instance


def dialogue_of(state: DialogueState, player: int) -> Dialogue:
    """What `player` knows at `state`: the public names and messages, its own private
    information and its own instructions (every other speaker's instruction left out)."""
    game: DialogueGame = state.get_game()
    lines = [Line(speaker=t.speaker, text=t.text,
                  instruction=t.instruction if t.speaker == player else None)
             for t in state.turns]
    opening = len(game.opening_turns)
    return Dialogue(names=list(game.instance.names), speaker=player,
                    private_info=dict(_instance(state).private_info[player]),
                    opening=lines[0] if opening else None, messages=lines[opening:])


def own_instructions(state: DialogueState, player: int) -> list[str]:
    return [t.instruction for t in state.turns if t.speaker == player and t.instruction is not None]


def render_text(spec: DomainSpec, dialogue: Dialogue) -> str:
    """The situation-first text of the speaker's information state (module docstring)."""
    me, name = dialogue.speaker, dialogue.name
    mine = dialogue.own_instructions
    replies = len(dialogue.messages)
    info = "; ".join(
        f"{key.replace('_', ' ')}: {value}" for key, value in dialogue.private_info.items()
    )
    head = (
        f"{name} ({spec.players[me]}, player {me}) chooses an instruction: "
        f"decision {len(mine) + 1} of {spec.num_max_replies}, after {replies} "
        f"message{'' if replies == 1 else 's'}."
    )
    lines = [
        head,
        f"{name}'s private information: {info or 'none'}.",
        f"{name}'s past instructions: {', '.join(mine) if mine else 'none'}.",
        "Messages, newest first:",
    ]
    said = [f"{dialogue.names[t.speaker]}: {t.text}" for t in reversed(dialogue.lines)]
    return "\n".join(lines + (said or ["(none yet)"]))


def render_features(spec: DomainSpec, dialogue: Dialogue) -> list[float]:
    """Message-index one-hot, own-earlier-instruction one-hots, domain private features."""
    labels = spec.instructions()
    turn = [0.0] * spec.reply_limit
    turn[min(len(dialogue.messages), spec.reply_limit - 1)] = 1.0
    slots = max(spec.num_max_replies - 1, 0)
    past = [0.0] * (slots * len(labels))
    for slot, instruction in enumerate(dialogue.own_instructions[:slots]):
        if instruction not in labels:
            raise ValueError(f"dialogue: {dialogue.name}'s past instruction {instruction!r} is "
                             f"not one of the config's instructions {labels}")
        past[slot * len(labels) + labels.index(instruction)] = 1.0
    return turn + past + private_features(spec, dialogue.private_info)


def decision_input(spec: DomainSpec, dialogue: Dialogue, with_features: bool = True
                   ) -> PolicyInput:
    """The policy's input at `dialogue`'s decision: the one function the dataset's records and
    the live `Advisor` are both built by."""
    return PolicyInput(text=render_text(spec, dialogue),
                       features=render_features(spec, dialogue) if with_features else None)


def text_view(state: DialogueState, player: int) -> str:
    """The text view of `player`'s information state at a game state."""
    return decision_input(state.get_game().spec, dialogue_of(state, player), False).text


def features(state: DialogueState, player: int) -> list[float]:
    """The structured features of `player`'s information state at a game state."""
    view = decision_input(state.get_game().spec, dialogue_of(state, player))
    assert view.features is not None
    return view.features


def decision_metadata(state: DialogueState, player: int) -> dict[str, Any]:
    return {"replies": state.replies, "own_decisions": len(own_instructions(state, player))}
