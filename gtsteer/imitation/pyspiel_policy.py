"""`DistilledPolicy` as an OpenSpiel `policy.Policy`, so NashConv, expected values, head-to-head
tables and CFR gain apply to it unchanged.

A state's text and features come from a *view*: by default the dialogue view of
`gtsteer.imitation.views` (for `DialogueState`s); on a `convert_to_cached_tree` copy, whose
states are C++ objects without a transcript, pass `view_from_records(records)` to look the view
up by information-state key. Probabilities are over the state's legal actions, matched to the
policy's instructions by label; an instruction the policy does not know is an
`ActionSetMismatchError`, raised when the adapter is built for games that list their actions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyspiel
from open_spiel.python import policy as os_policy

from gtsteer.imitation.dataset import DecisionRecord
from gtsteer.imitation.policy import ActionSetMismatchError, DistilledPolicy, PolicyInput
from gtsteer.solvers.cfr import PolicyTable, policy_table

#: (state, player) -> what the policy reads there (text, structured features or None).
View = Callable[[pyspiel.State, int], PolicyInput]


def dialogue_view(state: pyspiel.State, player: int) -> PolicyInput:
    """The dataset's view of a dialogue game state (`views.decision_input`)."""
    from gtsteer.imitation.views import decision_input, dialogue_of

    return decision_input(state.get_game().spec, dialogue_of(state, player))


def view_from_records(records: Sequence[DecisionRecord]) -> View:
    """A view that looks states up by `metadata["info_state"]` (as `records_from_game` sets)."""
    by_key = {r.metadata["info_state"]: PolicyInput(text=r.text, features=r.features)
              for r in records}

    def view(state: pyspiel.State, player: int) -> PolicyInput:
        key = state.information_state_string(player)
        if key not in by_key:
            raise KeyError(f"no record for information state {key[:120]!r}...")
        return by_key[key]

    return view


class DistilledPyspielPolicy(os_policy.Policy):
    """OpenSpiel policy that asks a `DistilledPolicy` at every decision (memoised per state)."""

    def __init__(
        self,
        game: pyspiel.Game,
        distilled: DistilledPolicy,
        view: View = dialogue_view,
        player_ids: Sequence[int] | None = None,
    ):
        super().__init__(game, list(player_ids or range(game.num_players())))
        self.distilled = distilled
        self._view = view
        self._memo: dict[str, dict[int, float]] = {}
        instructions = getattr(game, "instructions", None)
        if instructions is not None:  # dialogue games list their labels: check before any use
            for p in self.player_ids:
                distilled.action_index(instructions(p))

    def action_probabilities(self, state: pyspiel.State, player_id: int | None = None):
        player = state.current_player() if player_id is None else player_id
        key = state.information_state_string(player)
        if key not in self._memo:
            legal = state.legal_actions(player)
            labels = [state.action_to_string(player, a) for a in legal]
            try:
                probs = self.distilled.probs_for(self._view(state, player), actions=labels)
            except ActionSetMismatchError as exc:
                raise ActionSetMismatchError(f"player {player}: {exc}") from None
            self._memo[key] = {a: probs[label] for a, label in zip(legal, labels, strict=True)}
        return self._memo[key]

    def table(self, game: pyspiel.Game | None = None) -> PolicyTable:
        """The policy at every information state of `game` (default: the adapter's game), e.g.
        for `gtsteer.solvers.metrics.nash_conv` on the cached tree."""
        return policy_table(
            game or self.game, lambda s: list(self.action_probabilities(s).items())
        )
