"""Policies of per-deal games played in the dealt game (root chance node over K deals).

A policy solved on one deal's own game may use everything about that deal, including the
other players' private information. Played in the dealt game, where a player knows only its
own information, it has to act the same at every deal it cannot tell apart: here it plays the
deals' distributions mixed by the posterior of each deal at that information state (prior
times the state's reach under that deal's policies), what a player who draws one deal's policy
by the prior and keeps it would play on average there. Its NashConv in the dealt game shows
what solving each instance alone gets wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyspiel

from gtsteer.solvers.cfr import PolicyTable
from gtsteer.solvers.evaluate import StrategyError


def pool_deal_policies(dealt: pyspiel.Game, tables: Sequence[PolicyTable]) -> PolicyTable:
    """One policy for `dealt` from `tables[j]`, the policy of deal j's own game.

    `dealt`'s root must be a chance node whose outcome j leads to deal j, and an information
    state must read the same in deal j's game as under outcome j of `dealt` (true of the
    dialogue binding, whose information strings never name the deal).
    """
    root = dealt.new_initial_state()
    if not root.is_chance_node():
        raise ValueError("pool_deal_policies: the game's root is not a chance node over deals")
    outcomes = root.chance_outcomes()
    if len(outcomes) != len(tables):
        raise ValueError(f"{len(outcomes)} deals at the root but {len(tables)} policies")
    mass: dict[str, dict[int, float]] = {}
    weight: dict[str, float] = {}
    prior_mass: dict[str, dict[int, float]] = {}  # for states no deal's policy reaches
    prior: dict[str, float] = {}
    for j, p in outcomes:
        reach = _reach(root.child(j), tables[j], j)
        for key, r in reach.items():
            for store, total, w in ((mass, weight, p * r), (prior_mass, prior, p)):
                dist = store.setdefault(key, {})
                for a, q in tables[j][key]:
                    dist[a] = dist.get(a, 0.0) + w * q
                total[key] = total.get(key, 0.0) + w
    out = {}
    for key, prior_total in prior.items():
        dist, norm = ((mass[key], weight[key]) if weight[key] > 0
                      else (prior_mass[key], prior_total))
        out[key] = [(a, q / norm) for a, q in sorted(dist.items())]
    return out


def _reach(start: pyspiel.State, table: PolicyTable, deal: int) -> dict[str, float]:
    """Every information state under `start` with its reach probability (chance and every
    player following `table`; 0 for states only zero-probability actions lead to)."""
    out: dict[str, float] = {}
    stack = [(start, 1.0)]
    while stack:
        state, r = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack.extend((state.child(a), r * q) for a, q in state.chance_outcomes())
            continue
        key = state.information_state_string()
        if key not in table:
            raise StrategyError(f"deal {deal}'s policy has no information state {key!r}")
        out[key] = out.get(key, 0.0) + r
        probs = dict(table[key])
        stack.extend((state.child(a), r * probs.get(a, 0.0)) for a in state.legal_actions())
    return out
