"""Replays of a solved policy that read the fresh text: the held-out CFR gain's later decisions.

On a tree of fresh samples, a player who speaks after another reads a message the solver never
saw. Replaying the policy by action history hands it the policy solved for another text (the
solved message with the same sample index). These replays read the text instead, as the
paper's imitation step does in live play:

- `nearest`: the policy at the solved information state of the same decision (same player,
  same number of messages, same own past instructions and private information) whose text
  view is nearest to the fresh one by cosine similarity of their embeddings;
- `distilled`: an MLP (`gtsteer.imitation.train`) fitted to the solved tree's information
  states and their CFR policies, asked about the fresh text view.

A fresh information state that is a solved one word for word (the first mover's opening
decision; a dialogue whose messages came out the same) is played from the table by both, so
the exact part of the measurement is the same for every replay. Both are deterministic: the
embedder is, ties go to the first candidate in tree order, and training is seeded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyspiel

from gtsteer.imitation.policy import TextEmbedder
from gtsteer.imitation.views import decision_input, dialogue_of, own_instructions, text_view
from gtsteer.solvers.cfr import PolicyTable

if TYPE_CHECKING:
    from gtsteer.imitation.train_types import TrainConfig

History = tuple[int, ...]
Signature = tuple[int, int, tuple[str, ...], str]
#: What to play where a replay finds no counterpart (`any`).
Fallback = Callable[[pyspiel.State], list[tuple[int, float]]]


def decision_signature(state: pyspiel.State, player: int) -> Signature:
    """What a player knows of its decision apart from the others' words: who it is, how many
    messages came before, its own past instructions and its private information."""
    game = state.get_game()
    deal = getattr(state, "deal", None)
    private = game.deals[deal or 0].private_info[player]
    return (player, state.replies, tuple(own_instructions(state, player)),
            json.dumps(private, sort_keys=True))


def solved_decisions(
    game: pyspiel.Game, table: PolicyTable
) -> dict[Signature, list[tuple[str, str]]]:
    """Every decision of the solved tree the table covers, by signature: (key, text view) in
    tree order, each information state once."""
    out: dict[Signature, list[tuple[str, str]]] = {}
    seen: set[str] = set()

    def walk(state: pyspiel.State) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                walk(state.child(action))
            return
        player = state.current_player()
        key = state.information_state_string(player)
        if key in table and key not in seen:
            seen.add(key)
            out.setdefault(decision_signature(state, player), []).append(
                (key, text_view(state, player)))
        for action in state.legal_actions():
            walk(state.child(action))

    walk(game.new_initial_state())
    return out


@dataclass
class _Reader:
    """What both replays share: the table lookup of verbatim states, memo and counts."""

    table: PolicyTable
    fallback: Fallback
    verbatim: set[History] = field(default_factory=set)
    read: set[History] = field(default_factory=set)
    unmatched: set[History] = field(default_factory=set)
    _memo: dict[History, list[tuple[int, float]]] = field(default_factory=dict)

    def __call__(self, state: pyspiel.State) -> list[tuple[int, float]]:
        history = tuple(state.history())
        player = state.current_player()
        key = state.information_state_string(player)
        if key in self.table:
            self.verbatim.add(history)
            return self.table[key]
        if history not in self._memo:
            self._memo[history] = self._read(state, player)
        found = self._memo[history]
        (self.read if found else self.unmatched).add(history)
        return found or self.fallback(state)

    def _read(self, state: pyspiel.State, player: int) -> list[tuple[int, float]]:
        raise NotImplementedError


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0.0, norms, 1.0)


class NearestInfoState(_Reader):
    """The policy at the solved information state nearest to the fresh one (same signature;
    cosine similarity of the embedded text views)."""

    def __init__(self, solved: pyspiel.Game, table: PolicyTable, embedder: TextEmbedder,
                 fallback: Fallback):
        super().__init__(table, fallback)
        self.embedder = embedder
        decisions = solved_decisions(solved, table)
        texts = [text for found in decisions.values() for _, text in found]
        vectors = _unit_rows(embedder.embed(texts)) if texts else np.zeros((0, embedder.dim))
        self._index: dict[Signature, tuple[list[str], np.ndarray]] = {}
        row = 0
        for signature, found in decisions.items():
            self._index[signature] = ([k for k, _ in found], vectors[row:row + len(found)])
            row += len(found)

    def _read(self, state: pyspiel.State, player: int) -> list[tuple[int, float]]:
        candidates = self._index.get(decision_signature(state, player))
        if candidates is None:
            return []
        keys, vectors = candidates
        fresh = _unit_rows(self.embedder.embed([text_view(state, player)]))[0]
        return self.table[keys[int(np.argmax(vectors @ fresh))]]


class DistilledReader(_Reader):
    """An MLP fitted to the solved tree's information states, asked about the fresh text.
    `fit` is its fit on the solved states (`FitMetrics`), so a reader is judged by it too."""

    def __init__(self, solved: pyspiel.Game, table: PolicyTable, embedder: TextEmbedder,
                 fallback: Fallback, config: TrainConfig | None = None):
        from gtsteer.imitation.build import label_policy, records_from_game
        from gtsteer.imitation.train import train_policy

        super().__init__(table, fallback)
        players = {key: sig[0] for sig, found in solved_decisions(solved, table).items()
                   for key, _ in found}
        labels = label_policy({k: table[k] for k in players}, solved, players)
        records = records_from_game(solved, labels, solved.instance.index, with_features=False)
        self.policy, report = train_policy(records, embedder, config or distill_config())
        self.fit = report.train
        self._labels = solved.instructions

    def _read(self, state: pyspiel.State, player: int) -> list[tuple[int, float]]:
        labels = self._labels(player)
        legal = state.legal_actions()
        view = decision_input(state.get_game().spec, dialogue_of(state, player),
                              self.policy.config.uses_features)
        probs = self.policy.probs_for(view, actions=[labels[a] for a in legal])
        return [(a, probs[labels[a]]) for a in legal]


def distill_config() -> TrainConfig:
    """How a replay's MLP is fitted: one instance's tree is tens of states, fitted in about a
    second; no held-out split (the fresh tree is the test). Every state weighs the same: the
    measurement asks the policy about states its own equilibrium never reaches (a responder
    after an unguided opening), which reach weighting would leave untrained."""
    from gtsteer.imitation.train_types import TrainConfig

    return TrainConfig(hidden=(128,), steps=1500, batch=32, holdout=0.0, curve_points=1,
                       weighting="uniform")


def nearest_reader(
    embedder: TextEmbedder,
) -> Callable[[pyspiel.Game, PolicyTable], NearestInfoState]:
    """A `solvers.heldout.ReaderFactory` for the nearest-information-state replay."""

    def build(solved: pyspiel.Game, table: PolicyTable) -> NearestInfoState:
        return NearestInfoState(solved, table, embedder, _any_of(solved))

    return build


def distilled_reader(embedder: TextEmbedder, config: TrainConfig | None = None
                     ) -> Callable[[pyspiel.Game, PolicyTable], DistilledReader]:
    """A `solvers.heldout.ReaderFactory` for the distilled-policy replay."""

    def build(solved: pyspiel.Game, table: PolicyTable) -> DistilledReader:
        return DistilledReader(solved, table, embedder, _any_of(solved), config)

    return build


def _any_of(game: pyspiel.Game) -> Fallback:
    def fallback(state: pyspiel.State) -> list[tuple[int, float]]:
        return [(game.any_action(state.current_player()), 1.0)]

    return fallback
