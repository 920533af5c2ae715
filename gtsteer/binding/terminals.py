"""Every expanded terminal of a game as a plain record: who said what under which private
instruction, what the judge or reward model concluded, and what each player was paid.

`gtsteer solve` writes these next to each instance's result (`games/<i>.terminals.jsonl`), so a
reader can check a payoff, and through it the printed tables, against the dialogue behind it."""

from __future__ import annotations

from pydantic import BaseModel

from gtsteer.binding.game import DialogueGame


class TerminalTurn(BaseModel):
    speaker: str
    instruction: str | None  # the speaker's private action (None: the config's opening)
    text: str


class TerminalRow(BaseModel):
    history: list[int]  # pyspiel actions from the root, chance outcomes (LLM samples) included
    deal: int | None  # which private-information draw (dealt games), else None
    turns: list[TerminalTurn]
    verdict: str | None  # the judge's last answer (verdict games)
    raw: list[float]  # what the utility or reward model said
    returns: list[float]  # what the game paid (centred and bounded)


def terminal_rows(game: DialogueGame) -> list[TerminalRow]:
    """One row per terminal whose reward the game holds, in expansion order (no LLM call)."""
    names = game.instance.names
    rows = []
    for history, reward in game.rewards.items():
        state = game.new_initial_state()
        for action in history:
            state.apply_action(action)
        rows.append(TerminalRow(
            history=list(history),
            deal=state.deal if game.dealt else None,
            turns=[TerminalTurn(speaker=names[t.speaker], instruction=t.instruction, text=t.text)
                   for t in state.turns],
            verdict=game.verdicts.get(history),
            raw=reward.raw,
            returns=reward.returns,
        ))
    return rows
