"""Decision records from a solved dialogue game: one per information state of the whole tree.

Every information state gets a record, reached or not: its target is the CFR average policy
there and its weight the probability of reaching it when everyone plays that policy (chance
included). States the equilibrium never reaches keep weight 0; they stay in the file because a
best responder (NashConv) can still steer the game there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyspiel

from gtsteer.imitation.dataset import DatasetError, DecisionRecord
from gtsteer.imitation.views import decision_input, decision_metadata, dialogue_of
from gtsteer.solvers.cfr import PolicyTable

#: Information-state key -> {instruction label: probability} (what `gtsteer solve` stores).
LabelPolicy = Mapping[str, Mapping[str, float]]


def label_policy(table: PolicyTable, game: pyspiel.Game, players: Mapping[str, int]) -> dict:
    """A CFR table (action ids) as labels, for games whose `instructions(p)` name the actions."""
    return {
        key: {game.instructions(players[key])[a]: p for a, p in probs}
        for key, probs in table.items()
    }


#: Action id -> probability at one information state (absent actions have probability 0).
ActionProbs = Mapping[int, float]


def reach_weighted_records(
    game: pyspiel.Game,
    probs_at: Callable[[pyspiel.State, int, str], ActionProbs],
    record_at: Callable[[pyspiel.State, int, str, ActionProbs], DecisionRecord],
) -> list[DecisionRecord]:
    """The walk every dataset of a solved game is made by: one record per information state,
    in first-visit order, weighted by its reach probability when everyone plays the policy.

    `probs_at(state, player, key)` is the policy at information state `key` (it may raise for
    a state the policy lacks); `record_at(state, player, key, probs)` makes the state's record
    on its first visit (its `weight` is replaced by the reach). Every information state gets a
    record, reached or not, so a best responder's states are in the dataset too."""
    reach: dict[str, float] = {}
    found: dict[str, DecisionRecord] = {}

    def walk(state: pyspiel.State, p_reach: float) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, prob in state.chance_outcomes():
                walk(state.child(action), p_reach * prob)
            return
        player = state.current_player()
        key = state.information_state_string(player)
        probs = probs_at(state, player, key)
        if key not in found:
            found[key] = record_at(state, player, key, probs)
            reach[key] = 0.0
        reach[key] += p_reach
        for action in state.legal_actions():
            walk(state.child(action), p_reach * float(probs.get(action, 0.0)))

    walk(game.new_initial_state(), 1.0)
    return [rec.model_copy(update={"weight": reach[k]}) for k, rec in found.items()]


def records_from_game(
    game: pyspiel.Game,
    policy: LabelPolicy,
    instance: int,
    *,
    with_features: bool = True,
) -> list[DecisionRecord]:
    """Walk `game` (an expanded `DialogueGame`) and make one record per information state.

    `policy` must cover every information state of the tree; a missing one means the solve
    results belong to another game (other model, config or seed) and is a `DatasetError`."""

    def probs_at(state: pyspiel.State, player: int, key: str) -> dict[int, float]:
        if key not in policy:
            raise DatasetError(
                f"instance {instance}: information state not in the solved policy (were the "
                f"solve results made with another model, config or seed?): {key[:120]!r}..."
            )
        labels, probs = game.instructions(player), policy[key]
        return {a: float(probs.get(labels[a], 0.0)) for a in state.legal_actions()}

    def record_at(state: pyspiel.State, player: int, key: str, _: ActionProbs) -> DecisionRecord:
        return _record(state, player, game.instructions(player), policy[key], instance, key,
                       with_features)

    return reach_weighted_records(game, probs_at, record_at)


def _record(
    state: pyspiel.State,
    player: int,
    labels: list[str],
    probs: Mapping[str, float],
    instance: int,
    key: str,
    with_features: bool,
) -> DecisionRecord:
    legal = [labels[a] for a in state.legal_actions()]
    unknown = sorted(set(probs) - set(legal))
    if unknown:
        raise DatasetError(f"instance {instance}: policy names unknown instructions {unknown}")
    target = [float(probs.get(label, 0.0)) for label in legal]
    total = sum(target)
    if total <= 0:
        raise DatasetError(f"instance {instance}: the policy at a state sums to 0: {key[:80]!r}")
    dialogue = dialogue_of(state, player)
    view = decision_input(state.get_game().spec, dialogue, with_features)
    return DecisionRecord(
        text=view.text,
        features=view.features,
        actions=legal,
        target=[p / total for p in target],  # C++ average policies sum to 1 within ~1e-12
        weight=0.0,
        instance=instance,
        player=player,
        metadata={"info_state": key, **decision_metadata(state, player),
                  "dialogue": dialogue.model_dump(mode="json")},
    )
