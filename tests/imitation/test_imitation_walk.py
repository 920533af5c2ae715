"""`reach_weighted_records`: the one walk that turns a solved game into decision records
(dialogue games through `records_from_game`, playstyle games through `werewolf_steer`)."""

from __future__ import annotations

import inspect

import pyspiel
import pytest

from gtsteer.imitation.build import reach_weighted_records
from gtsteer.imitation.dataset import DecisionRecord


def test_kuhn_reach_weights_under_the_uniform_policy() -> None:
    game = pyspiel.load_game("kuhn_poker")
    seen: list[str] = []

    def probs_at(state: pyspiel.State, _player: int, _key: str) -> dict[int, float]:
        return {a: 1.0 / len(state.legal_actions()) for a in state.legal_actions()}

    def record_at(state: pyspiel.State, player: int, key: str, probs) -> DecisionRecord:
        seen.append(key)
        return DecisionRecord(text=key, actions=[str(a) for a in sorted(probs)],
                              target=[probs[a] for a in sorted(probs)], weight=0.0,
                              instance=0, player=player)

    records = reach_weighted_records(game, probs_at, record_at)
    weight = {r.text: r.weight for r in records}
    assert len(records) == len(seen) == 12  # Kuhn: 3 cards x 4 betting histories
    # player 0 holding a card: the card is dealt with probability 1/3
    assert weight["0"] == pytest.approx(1 / 3)
    # player 1 holding a card after a pass: 2 opposing cards x (1/3 x 1/2) x 1/2 (pass)
    assert weight["1p"] == pytest.approx(1 / 6)
    # player 0 facing a bet after its pass: 1/3 x 1/2 (pass) x 1/2 (bet)
    assert weight["2pb"] == pytest.approx(1 / 12)


def test_a_state_the_policy_never_reaches_keeps_weight_zero() -> None:
    game = pyspiel.load_game("kuhn_poker")

    def always_pass(_state: pyspiel.State, _player: int, _key: str) -> dict[int, float]:
        return {0: 1.0}

    def record_at(_state, player: int, key: str, _probs) -> DecisionRecord:
        return DecisionRecord(text=key, actions=["p", "b"], target=[1.0, 0.0], weight=0.0,
                              instance=0, player=player)

    weight = {r.text: r.weight for r in reach_weighted_records(game, always_pass, record_at)}
    assert weight["1b"] == 0.0 and weight["1p"] == pytest.approx(1 / 3)


def test_the_werewolf_driver_walks_with_it() -> None:
    from gtsteer.runs import werewolf_steer

    assert "reach_weighted_records(" in inspect.getsource(werewolf_steer.records_of)
