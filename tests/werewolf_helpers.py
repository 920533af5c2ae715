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
