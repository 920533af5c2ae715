"""Exact expected values by full traversal of a (small, cached) game tree.

OpenSpiel's `expected_game_score.policy_value` needs Python policy objects per player; here a
strategy is a plain function from a state to `[(action, probability)]`, which lets one call mix a
tabular CFR policy for one player with "always play `any`" for another without wrapping classes.
Dialogue trees are a few hundred nodes, so exact recursion is cheap and has no sampling noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter

import numpy as np
import pyspiel

from gtsteer.solvers.cfr import PolicyTable

Strategy = Callable[[pyspiel.State], list[tuple[int, float]]]


class StrategyError(ValueError):
    """A strategy cannot act at a state (a policy without that state, an illegal action)."""


def tabular(table: PolicyTable) -> Strategy:
    """Play the table's distribution at each information state; a state the table lacks is an
    error (never a silent uniform fallback, which would measure a different policy)."""

    def strategy(state: pyspiel.State) -> list[tuple[int, float]]:
        key = state.information_state_string()
        if key not in table:
            raise StrategyError(
                f"policy has no entry for player {state.current_player()}'s information state"
                f" {key!r} (was it computed on another game?)"
            )
        return table[key]

    return strategy


def uniform(actions: Sequence[int] | None = None) -> Strategy:
    """Uniform over legal actions, or over those of `actions` that are legal (a baseline that
    leaves one action out: Werewolf's uniform playstyle never plays `unsteered`); an error
    where none of `actions` is legal."""
    chosen = None if actions is None else set(actions)

    def strategy(state: pyspiel.State) -> list[tuple[int, float]]:
        legal = state.legal_actions()
        if chosen is not None:
            legal = [a for a in legal if a in chosen]
            if not legal:
                raise StrategyError(f"uniform: none of the actions {sorted(chosen)} is legal "
                                    f"for player {state.current_player()} at {state}")
        return [(a, 1.0 / len(legal)) for a in legal]

    return strategy


def fixed(actions: Sequence[int], otherwise: Sequence[int] | None = None) -> Strategy:
    """Always the given action of the acting player (`actions[player]`); where that action is
    not legal, `otherwise[player]` if given (a game whose turns offer their own instructions:
    "always Monday" is `any` at a reply), else an error, so an "always X" row never silently
    measures something else."""

    def strategy(state: pyspiel.State) -> list[tuple[int, float]]:
        player = state.current_player()
        action = actions[player]
        if otherwise is not None and action not in state.legal_actions():
            action = otherwise[player]
        if action not in state.legal_actions():
            raise StrategyError(
                f"fixed strategy: action {action} is not legal for player {player} at {state}"
            )
        return [(action, 1.0)]

    return strategy


def truncated(table: PolicyTable, tolerance: float) -> PolicyTable:
    """`table` with actions played with probability < `tolerance` dropped and the rest
    renormalised. CFR's average policy keeps tiny weights on dominated actions; truncating
    them lets a caller expand only the branches a policy really plays, at a value error of at
    most the dropped mass times the payoff range."""
    if not 0.0 <= tolerance < 1.0:
        raise ValueError(f"tolerance: must be in [0, 1), got {tolerance}")
    out: PolicyTable = {}
    for key, probs in table.items():
        kept = (
            [(a, p) for a, p in probs if p >= tolerance and p > 0.0]
            or [max(probs, key=itemgetter(1))]
        )
        z = sum(p for _, p in kept)
        out[key] = [(a, p / z) for a, p in kept]
    return out


#: (chance state, the outcome that happened, player) -> the outcomes there that the player
#: cannot tell from it (a deal that gives it the same private information).
Indistinct = Callable[[pyspiel.State, int, int], Sequence[int]]


class Replayed:
    """A tabular policy of game `source` played on another game with the same actions and
    chance outcomes (the same positions, other LLM samples): at a state, play the table's
    distribution at the information state `source` has after the same action history.

    With `indistinct`, the player does not condition on chance outcomes it cannot observe: at
    each chance node, the outcomes `indistinct` names (say, deals that give this player the
    same private information) are all looked up, and the tables there are mixed by their
    chance probabilities. Without it, a replayed player whose information states in `source`
    tell hidden deals apart (through the other player's words) would be handed the deal
    itself on the new game, where only other words reveal it.

    Where `source` has no such decision (its dialogue ended earlier there) and `resample` is
    given, the same player actions are looked up under every other outcome of the chance nodes
    `resample` accepts, and the mean of the table's distributions there is played (the policy
    for those instructions, averaged over the samples the solver saw). Only where that finds
    nothing either is `fallback` played. `hits`, `borrowed` and `misses` record which histories
    got which, so a caller can say how much of a measurement rests on each; `pooled` the hits
    that mixed more than one information state.
    """

    def __init__(
        self,
        table: PolicyTable,
        source: pyspiel.Game,
        fallback: Strategy,
        resample: Callable[[pyspiel.State], bool] | None = None,
        indistinct: Indistinct | None = None,
    ):
        self.table, self.source, self.fallback = table, source, fallback
        self.resample, self.indistinct = resample, indistinct
        self.hits: set[tuple[int, ...]] = set()
        self.borrowed: set[tuple[int, ...]] = set()
        self.misses: set[tuple[int, ...]] = set()
        self.pooled: set[tuple[int, ...]] = set()
        self._found: dict[tuple[int, ...], tuple[dict[str, float], bool]] = {}

    def source_keys(self, history: Sequence[int], player: int) -> tuple[dict[str, float], bool]:
        """The table keys to play after `history` with their weights (summing to 1), and
        whether they are the position's own (else: the same player actions under other chance
        outcomes; empty: none found)."""
        h = tuple(history)
        if h not in self._found:
            root = self.source.new_initial_state()
            exact = self._known(self._matches(root, h, player, swap=False))
            if exact or self.resample is None:
                self._found[h] = (exact, True)
            else:
                self._found[h] = (self._known(self._matches(root, h, player, swap=True)), False)
        return self._found[h]

    def _known(self, weighted: list[tuple[str, float]]) -> dict[str, float]:
        """The keys the table has, their weights summed and renormalised."""
        out: dict[str, float] = {}
        for key, w in weighted:
            if key in self.table:
                out[key] = out.get(key, 0.0) + w
        total = sum(out.values())
        return {k: w / total for k, w in out.items()} if total > 0.0 else {}

    def _matches(self, state: pyspiel.State, rest: tuple[int, ...], player: int,
                 swap: bool) -> list[tuple[str, float]]:
        if not rest:
            if state.is_terminal() or state.current_player() != player:
                return []
            return [(state.information_state_string(player), 1.0)]
        if state.is_terminal():
            return []
        action, tail = rest[0], rest[1:]
        if state.is_chance_node():
            chance = dict(state.chance_outcomes())
            if swap and self.resample is not None and self.resample(state):
                options = list(chance)
            elif self.indistinct is not None:
                options = [a for a in self.indistinct(state, action, player) if a in chance]
            else:
                options = [action] if action in chance else []
            total = sum(chance[a] for a in options)
            weights = [(a, chance[a] / total) for a in options if chance[a] > 0.0]
        else:
            weights = [(action, 1.0)] if action in state.legal_actions() else []
        return [(k, w * v) for a, w in weights
                for k, v in self._matches(state.child(a), tail, player, swap)]

    def __call__(self, state: pyspiel.State) -> list[tuple[int, float]]:
        history = tuple(state.history())
        keys, exact = self.source_keys(history, state.current_player())
        if not keys:
            self.misses.add(history)
            return self.fallback(state)
        (self.hits if exact else self.borrowed).add(history)
        if len(keys) == 1:
            return self.table[next(iter(keys))]
        if exact:
            self.pooled.add(history)
        mean: dict[int, float] = {}
        for key, weight in keys.items():
            for a, p in self.table[key]:
                mean[a] = mean.get(a, 0.0) + weight * p
        return sorted(mean.items())


def expected_returns(game: pyspiel.Game, strategies: Sequence[Strategy]) -> np.ndarray:
    """Each player's exact expected return when player p plays `strategies[p]`."""
    if len(strategies) != game.num_players():
        raise ValueError(f"need {game.num_players()} strategies, got {len(strategies)}")
    return _value(game.new_initial_state(), strategies)


def _value(state: pyspiel.State, strategies: Sequence[Strategy]) -> np.ndarray:
    if state.is_terminal():
        return np.asarray(state.returns(), dtype=float)
    if state.is_chance_node():
        outcomes = state.chance_outcomes()
    else:
        outcomes = strategies[state.current_player()](state)
    total = np.zeros(state.get_game().num_players())
    for action, prob in outcomes:
        if prob > 0.0:
            total += prob * _value(state.child(action), strategies)
    return total


def first_decision_distribution(
    game: pyspiel.Game, strategies: Sequence[Strategy]
) -> list[dict[int, float]]:
    """Per player, P(first action = a) under the joint strategy (chance included).

    Normalised over the histories where the player acts at all, so a dialogue that could end
    before a player speaks still yields a distribution over that player's instructions.
    """
    n = game.num_players()
    mass: list[dict[int, float]] = [{} for _ in range(n)]

    def walk(state: pyspiel.State, reach: float, acted: frozenset[int]) -> None:
        if state.is_terminal() or reach <= 0.0:
            return
        if state.is_chance_node():
            for a, p in state.chance_outcomes():
                walk(state.child(a), reach * p, acted)
            return
        player = state.current_player()
        for a, p in strategies[player](state):
            if player not in acted:
                mass[player][a] = mass[player].get(a, 0.0) + reach * p
            walk(state.child(a), reach * p, acted | {player})

    walk(game.new_initial_state(), 1.0, frozenset())
    out = []
    for m in mass:
        z = sum(m.values())
        out.append({a: v / z for a, v in sorted(m.items())} if z > 0 else {})
    return out
