"""Records from a solved gtsteer game, the pyspiel adapter, and exact evaluation.

The game is `mixed_2x2` (tests/data): a simultaneous 3x3 zero-sum game played through the
binding, with the known equilibrium proposer (a 1/3, b 2/3), responder (a 2/3, b 1/3), value 2/3.
"""

from __future__ import annotations

import numpy as np
import pytest
from imitation_helpers import situation_embedder
from open_spiel.python.algorithms import exploitability
from solve_helpers import MIXED_2X2, ConstantBackend

from gtsteer.binding import expand_sync, make_game, make_instance
from gtsteer.domains import load_spec
from gtsteer.imitation import ActionSetMismatchError, DecisionRecord, TrainConfig, train_policy
from gtsteer.imitation.build import label_policy, records_from_game
from gtsteer.imitation.evaluate import evaluate_instance, summarize
from gtsteer.imitation.pyspiel_policy import DistilledPyspielPolicy, view_from_records
from gtsteer.llm import LLM
from gtsteer.solvers import cached_tree, solve_cfr
from gtsteer.solvers.metrics import nash_conv

MOVES = ["a", "b", "any"]


def solved_game(index: int = 0):
    spec = load_spec(MIXED_2X2)
    game = make_game(spec, make_instance(spec, index), LLM(backend=ConstantBackend()))
    expand_sync(game, progress=False)
    result = solve_cfr(game, solver="cfr+", iterations=2000)
    return game, label_policy(result.policy, game, result.players)


@pytest.fixture(scope="module")
def game_and_records():
    game, policy = solved_game()
    return game, records_from_game(game, policy, instance=0)


def test_one_record_per_information_state_with_reach_weights(game_and_records) -> None:
    game, records = game_and_records
    # The responder cannot see the proposer's instruction (constant messages): one state each.
    assert [r.player for r in records] == [0, 1]
    proposer, responder = records
    assert proposer.actions == MOVES and proposer.weight == pytest.approx(1.0)
    assert proposer.target == pytest.approx([1 / 3, 2 / 3, 0.0], abs=0.01)
    assert responder.target == pytest.approx([2 / 3, 1 / 3, 0.0], abs=0.01)
    assert responder.weight == pytest.approx(1.0)  # reached whatever the proposer does
    assert proposer.text.startswith(f"{game.instance.names[0]} (proposer, player 0) chooses")
    assert "(none yet)" in proposer.text and "I have made my choice." in responder.text
    # Features: message-index one-hot (2 messages), no earlier own instructions, no domain part.
    assert proposer.features == [1.0, 0.0] and responder.features == [0.0, 1.0]
    assert proposer.metadata["info_state"] == game.new_initial_state().information_state_string()


def test_records_of_fruit_trading_carry_domain_features_and_zero_reach_states() -> None:
    from binding_support import FRUIT, fruit_spec

    from gtsteer.testing import ScriptedBackend

    spec = fruit_spec()
    game = make_game(
        spec, make_instance(spec, 0), LLM("scripted", backend=ScriptedBackend(), max_retries=0)
    )
    expand_sync(game, progress=False)
    result = solve_cfr(game, solver="cfr+", iterations=50)
    records = records_from_game(game, label_policy(result.policy, game, result.players), 0)
    assert FRUIT.exists() and records[0].player == 0
    info = game.instance.private_info[0]
    assert f"fruits owned: {info['fruits_owned']}" in records[0].text
    # 2 message one-hot + 4 counts + 4 values.
    assert len(records[0].features) == 10
    counts = [int(x.split(": ")[1]) for x in info["fruits_owned"].split(", ")]
    assert records[0].features[2:6] == pytest.approx([c / 3 for c in counts])
    # The total reach of the responder's states is 1 (one of them is reached in every play).
    assert sum(r.weight for r in records if r.player == 1) == pytest.approx(1.0)


def test_adapter_probabilities_and_nash_conv(game_and_records) -> None:
    game, records = game_and_records
    # Struct features tell the two states apart; 300 steps fit the two targets closely.
    policy, _ = train_policy(
        records, None, TrainConfig(steps=300, features="struct", holdout=0, seed=0)
    )
    adapter = DistilledPyspielPolicy(game, policy)
    state = game.new_initial_state()
    probs = adapter.action_probabilities(state)
    assert sorted(probs) == state.legal_actions()
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs[0] == pytest.approx(1 / 3, abs=0.03) and probs[1] == pytest.approx(2 / 3, abs=0.03)
    # OpenSpiel's own Python NashConv runs on the adapter over the Python game ...
    conv = exploitability.nash_conv(game, adapter)
    assert 0.0 <= conv < 0.2
    # ... and agrees with the C++ one on the cached tree, where states are looked up by key.
    tree = cached_tree(game)
    on_tree = DistilledPyspielPolicy(tree, policy, view=view_from_records(records))
    assert nash_conv(tree, on_tree.table()) == pytest.approx(conv, abs=1e-6)


def test_adapter_rejects_a_policy_trained_on_other_instructions(game_and_records) -> None:
    game, records = game_and_records
    renamed = [
        DecisionRecord(**{**r.model_dump(), "actions": ["x", "y", "any"]}) for r in records
    ]
    policy, _ = train_policy(renamed, None, TrainConfig(steps=5, features="struct", holdout=0))
    with pytest.raises(ActionSetMismatchError, match=r"\['a', 'b'\] not among"):
        DistilledPyspielPolicy(game, policy)


def test_evaluation_of_a_policy_equal_to_cfr(game_and_records) -> None:
    game, records = game_and_records
    policy, _ = train_policy(
        records, None, TrainConfig(steps=400, features="struct", holdout=0, seed=1)
    )
    ev = evaluate_instance(game, policy, records)
    # Close to the equilibrium: low NashConv, value ~ CFR's, CFR gain 2 (3 for the proposer
    # against `any`, 1 for the responder).
    assert ev.nash_conv < 0.2 and ev.nash_conv_cfr < 0.01
    assert ev.cfr_gain == pytest.approx(2.0, abs=0.02)
    assert ev.dim_gain == pytest.approx(2.0, abs=0.1)
    assert ev.head_to_head["dim"]["any"] == pytest.approx(2.0, abs=0.1)
    # Against `any`, DIM wins; DIM vs DIM is the zero-sum value averaged over roles: 0.
    meta = ev.metagame
    assert meta.table[0][1] > meta.table[1][1]
    assert meta.table[0][0] == pytest.approx(0.0, abs=1e-9)
    assert meta.joint is not None
    assert np.asarray(meta.joint).sum(axis=0) == pytest.approx(np.zeros((2, 2)))  # zero-sum
    assert meta.dim_probability == 1.0  # DIM dominates `any` for both roles
    summary = summarize([ev, ev])
    assert summary.dim_probability.mean == 1.0 and summary.instances == [0, 0]


def test_evaluation_with_a_text_policy(game_and_records) -> None:
    game, records = game_and_records
    texts = [r.model_copy(update={"text": f"s{r.player} " + r.text}) for r in records]
    policy, _ = train_policy(
        texts, situation_embedder(), TrainConfig(steps=50, holdout=0, seed=0)
    )
    ev = evaluate_instance(game, policy, texts)
    assert ev.nash_conv >= 0.0 and 0.0 <= ev.metagame.dim_probability <= 1.0


def test_second_decision_carries_own_earlier_instruction() -> None:
    from gtsteer.domains import spec_from_dict

    spec = spec_from_dict({**load_spec(MIXED_2X2).model_dump(), "num_max_replies": 2})
    game = make_game(spec, make_instance(spec, 0), LLM(backend=ConstantBackend()))
    expand_sync(game, progress=False)
    result = solve_cfr(game, solver="cfr+", iterations=50)
    records = records_from_game(game, label_policy(result.policy, game, result.players), 0)
    later = [r for r in records if r.player == 0 and r.metadata["own_decisions"] == 1]
    assert len(later) == 3  # one per own first instruction (a, b, any)
    for r in later:
        first = r.text.split("past instructions: ")[1].split(".")[0]
        assert first in MOVES and r.text.count("I have made my choice.") == 2
        # 4 message slots (2 players x 2 replies), then 1 slot x 3 instructions.
        assert r.features[:4] == [0.0, 0.0, 1.0, 0.0]
        assert r.features[4:] == [float(m == first) for m in MOVES]
    assert sum(r.weight for r in later) == pytest.approx(1.0)


def test_dealt_game_records_hold_only_own_private_info() -> None:
    from binding_support import fruit_spec

    from gtsteer.testing import ScriptedBackend

    spec = fruit_spec().with_deals(2)
    game = make_game(
        spec, make_instance(spec, 0), LLM("scripted", backend=ScriptedBackend(), max_retries=0)
    )
    expand_sync(game, progress=False)
    result = solve_cfr(game, solver="cfr+", iterations=50)
    records = records_from_game(game, label_policy(result.policy, game, result.players), 0)
    proposer = [r for r in records if r.player == 0]
    assert len(proposer) == 2 and [r.weight for r in proposer] == pytest.approx([0.5, 0.5])
    for r, deal in zip(proposer, game.deals, strict=True):
        assert deal.private_info[0]["fruits_owned"] in r.text
        assert deal.private_info[1]["fruits_owned"] not in r.text or (
            deal.private_info[1]["fruits_owned"] == deal.private_info[0]["fruits_owned"]
        )
    assert sum(r.weight for r in records if r.player == 1) == pytest.approx(1.0)
