"""Policies of per-deal games played in the dealt game (root chance node over K deals).

A policy solved on one deal's own game may use everything about that deal, including the
other players' private information. Played in the dealt game, where a player knows only its
own information, it has to act the same at every deal it cannot tell apart: here it plays the
deals' distributions averaged with their chance weights. Its NashConv in the dealt game shows
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
    for j, p in outcomes:
        seen: set[str] = set()
        stack = [root.child(j)]
        while stack:
            state = stack.pop()
            if state.is_terminal():
                continue
            if state.is_chance_node():
                stack.extend(state.child(a) for a, _ in state.chance_outcomes())
                continue
            key = state.information_state_string()
            if key not in seen:
                seen.add(key)
                if key not in tables[j]:
                    raise StrategyError(f"deal {j}'s policy has no information state {key!r}")
                dist = mass.setdefault(key, {})
                for a, q in tables[j][key]:
                    dist[a] = dist.get(a, 0.0) + p * q
                weight[key] = weight.get(key, 0.0) + p
            stack.extend(state.child(a) for a in state.legal_actions())
    return {k: [(a, q / weight[k]) for a, q in sorted(d.items())] for k, d in mass.items()}
