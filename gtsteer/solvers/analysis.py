"""All per-instance numbers of a solved game, independent of where the game came from.

Kept apart from the solve driver (`gtsteer.runs.solve`) so standard OpenSpiel games (matrix
games, Kuhn poker) exercise exactly the code that measures dialogue games.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyspiel
from pydantic import BaseModel

from gtsteer.solvers.cfr import PolicyTable
from gtsteer.solvers.evaluate import (
    Strategy,
    expected_returns,
    first_decision_distribution,
    fixed,
    tabular,
    uniform,
)
from gtsteer.solvers.metrics import cfr_gain, head_to_head, nash_conv, normalized

#: Head-to-head name prefix of "always play this instruction".
ALWAYS = "always:"


class GameValues(BaseModel):
    """Every number `analyze` measures on one solved game."""

    #: Sum over players of the best-response gain against the policy (OpenSpiel's NashConv).
    nash_conv: float
    #: nash_conv / (players x the config's payoff range), `metrics.normalized`: the mean
    #: best-response gain per player as a share of the range, in [0, 1].
    nash_conv_normalized: float
    cfr_gain: float
    #: cfr_gain / the config's payoff range (cfr_gain is already a mean over players).
    cfr_gain_normalized: float
    cfr_gain_per_player: list[float]
    value_cfr: list[float]  # each player's value when all play CFR
    value_any: list[float]  # each player's value when all play `any`
    head_to_head: dict[str, dict[str, float]]
    first_instruction: list[dict[str, float]]  # per player


def baseline_strategies(
    table: PolicyTable, labels: Sequence[Sequence[str]], any_actions: Sequence[int]
) -> dict[str, Strategy]:
    """`cfr`, `any`, `always:<instruction>` for every other instruction that every player has
    (`any` at a turn that does not offer it), and `uniform`.

    The prefix keeps an instruction called "cfr" or "uniform" from colliding with those rows;
    an instruction some player lacks gets no row (a row must mean what its name says).
    """
    strategies: dict[str, Strategy] = {"cfr": tabular(table), "any": fixed(list(any_actions))}
    any_label = labels[0][any_actions[0]]
    for label in labels[0]:
        if label == any_label or not all(label in ls for ls in labels):
            continue
        name = f"{ALWAYS}{label}"
        if name in strategies:
            raise ValueError(f"instruction {label!r} appears twice in player 0's action list")
        strategies[name] = fixed([list(ls).index(label) for ls in labels], any_actions)
    strategies["uniform"] = uniform()
    return strategies


def analyze(
    game: pyspiel.Game,
    table: PolicyTable,
    labels: Sequence[Sequence[str]],
    any_actions: Sequence[int],
    span: float | None = None,
) -> GameValues:
    """NashConv, CFR gain, head-to-head and first-instruction distribution of one game.

    `game` should be the cached tree the policy was computed on; `labels[p][a]` names action
    `a` of player `p`; `any_actions[p]` is player p's unguided baseline action; `span` is
    the config's payoff range (None: the game's own, for a game without a config).
    """
    strategies = baseline_strategies(table, labels, any_actions)
    cfr_s, any_s = strategies["cfr"], strategies["any"]
    n = game.num_players()
    conv = nash_conv(game, table)
    if span is None:
        span = game.max_utility() - game.min_utility()
    gains = cfr_gain(game, cfr_s, any_s)
    gain = float(np.mean(gains))
    first = first_decision_distribution(game, [cfr_s] * n)
    return GameValues(
        nash_conv=conv,
        nash_conv_normalized=normalized(conv, span, n),
        cfr_gain=gain,
        cfr_gain_normalized=normalized(gain, span),
        cfr_gain_per_player=gains,
        value_cfr=[float(v) for v in expected_returns(game, [cfr_s] * n)],
        value_any=[float(v) for v in expected_returns(game, [any_s] * n)],
        head_to_head=head_to_head(game, strategies),
        first_instruction=[
            {labels[p][a]: prob for a, prob in dist.items()} for p, dist in enumerate(first)
        ],
    )
