"""The paper's DIM-vs-LLM meta-game: each player delegates to the distilled policy or not.

Payoffs come from exact game values: `per_player[i][x][y]` is player i's value when i plays x
and every other player plays y (x, y in DIM, LLM; LLM means the unguided `any` instruction).
The headline is the symmetric meta-game `table[x][y] = mean_i per_player[i][x][y]`, i.e. a
player who is equally likely to hold each role -- the same averaging as the paper's tables and
gtsteer's head-to-head. It is reported as such, next to the per-player tables, never in their
place. For two players `joint[p][x0][x1]` keeps the full general-sum payoff tensor too.

The equilibrium of a symmetric 2x2 game has a closed form (no solver library needed): with
x = T[DIM][DIM] - T[LLM][DIM] and y = T[DIM][LLM] - T[LLM][LLM], DIM's advantage against a
population playing DIM with probability p is g(p) = p*x + (1-p)*y. Every symmetric equilibrium
is listed; the one reported is where replicator dynamics started at 50/50 come to rest (the
unique one when there is only one; a coordination game has three).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

STRATEGIES = ("DIM", "LLM")
#: Payoff differences below this count as ties.
TIE = 1e-9


class MetaGame(BaseModel):
    strategies: list[str] = list(STRATEGIES)
    #: per_player[i][x][y]: i's value when i plays x and all others play y.
    per_player: list[list[list[float]]]
    #: Symmetric table: mean over players of per_player.
    table: list[list[float]]
    #: Two players only: joint[p][x0][x1] = player p's value when player 0 plays x0, 1 plays x1.
    joint: list[list[list[float]]] | None = None
    #: Probability of DIM in the reported symmetric equilibrium.
    dim_probability: float
    #: P(DIM) of every symmetric equilibrium (None: every p is one, the table is flat).
    equilibria: list[float] | None


def symmetric_equilibria(table: Sequence[Sequence[float]]) -> tuple[float, list[float] | None]:
    """(P(DIM) reached by replicator dynamics from 1/2, all symmetric equilibria)."""
    t = np.asarray(table, float)
    x = t[0, 0] - t[1, 0]
    y = t[0, 1] - t[1, 1]
    x = 0.0 if abs(x) <= TIE else x
    y = 0.0 if abs(y) <= TIE else y
    if x == 0.0 and y == 0.0:
        return 0.5, None
    root = y / (y - x) if x != y else None
    interior = root if root is not None and 0.0 < root < 1.0 else None
    eqs = ([0.0] if y <= 0.0 else []) + ([interior] if interior is not None else [])
    eqs += [1.0] if x >= 0.0 else []
    g_half = (x + y) / 2
    if abs(g_half) <= TIE:
        selected = 0.5
    elif g_half > 0:
        selected = interior if interior is not None and interior > 0.5 else 1.0
    else:
        selected = interior if interior is not None and interior < 0.5 else 0.0
    return float(selected), [float(e) for e in eqs]


def meta_game(
    per_player: ArrayLike,
    joint: ArrayLike | None = None,
) -> MetaGame:
    """The meta-game from per-player deviation values (see the module docstring)."""
    arr = np.asarray(per_player, float)
    if arr.ndim != 3 or arr.shape[1:] != (2, 2):
        raise ValueError(f"per_player: expected shape (players, 2, 2), got {arr.shape}")
    table = arr.mean(axis=0)
    selected, eqs = symmetric_equilibria(table)
    return MetaGame(
        per_player=arr.tolist(),
        table=table.tolist(),
        joint=None if joint is None else np.asarray(joint, float).tolist(),
        dim_probability=selected,
        equilibria=eqs,
    )
