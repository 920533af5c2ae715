"""Shared builders for the werewolf tests (plain functions, imported by the test modules)."""

from __future__ import annotations

from gtsteer.werewolf.engine import new_game
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameState

NAMES = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kim", "Leo"]
SHORT = {"W": Role.WEREWOLF, "V": Role.VILLAGER, "D": Role.DOCTOR, "T": Role.DETECTIVE,
         "M": Role.MANIAC}


def table(roles: str, seed: int = 0, **kwargs) -> GameState:
    """A game whose seats have exactly these roles, e.g. "WWDTMVV" -> Ann=werewolf, ..."""
    n = len(roles)
    cast = [(NAMES[i], f"story of {NAMES[i]}", "balanced") for i in range(n)]
    wolves = roles.count("W")
    state = new_game(cast, seed=seed, n_wolves=wolves, maniac="M" in roles, **kwargs)
    for p, r in zip(state.players, roles, strict=True):
        p.role = SHORT[r]
    return state


def play_night(state: GameState, choices: dict[str, str]) -> tuple[GameState, list[str]]:
    """Answer every pending night decision from `choices`: slot -> "Target" (the slot's own
    action) or "action:Target" (e.g. the doctor's one-time kill, "kill:Ann")."""
    from gtsteer.werewolf.engine import pending, step
    from gtsteer.werewolf.state import Decision

    asked: list[str] = []
    while state.phase == "night":
        want = pending(state)
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor,
                                         text=f"{want.actor} says hm"))
            continue
        asked.append(want.verb)
        action, _, target = choices[want.verb].rpartition(":")
        state = step(state, Decision(kind="night", actor=want.actor, target=target,
                                     action=action or None))
    return state, asked


def finish_summaries(state: GameState) -> GameState:
    """Answer the summaries that close a night (empty notes), so the next day starts."""
    from gtsteer.werewolf.engine import pending, step
    from gtsteer.werewolf.state import Decision

    while state.phase == "summary":
        state = step(state, Decision(kind="summary", actor=pending(state).actor))
    return state
