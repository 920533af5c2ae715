"""Exact values, CFR gain, head-to-head, first-instruction distribution and CIs, by hand."""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

from gtsteer.solvers import (
    analyze,
    cfr_gain,
    expected_returns,
    first_decision_distribution,
    fixed,
    head_to_head,
    mean_ci,
    tabular,
    uniform,
)
from gtsteer.solvers.cfr import cached_tree, policy_table
from gtsteer.solvers.metrics import mcnemar_exact, side_of_zero, t_interval, wilson

LABELS = ["a", "b", "any"]
# General-sum; rows are player 0's action, columns player 1's.
R = np.array([[3.0, 0.0, 4.0], [1.0, 2.0, 4.0], [0.0, 0.0, 1.0]])
C = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0], [2.0, 2.0, 1.0]])
P_ROW = [0.5, 0.5, 0.0]  # the "CFR" policy under test (not an equilibrium: values are by hand)
P_COL = [0.25, 0.75, 0.0]


def game() -> pyspiel.Game:
    matrix = pyspiel.create_matrix_game("gs", "gs", LABELS, LABELS, R.tolist(), C.tolist())
    return cached_tree(pyspiel.convert_to_turn_based(matrix))


def table(g: pyspiel.Game):
    return policy_table(g, lambda s: list(enumerate(P_ROW if s.current_player() == 0 else P_COL)))


def bilinear(x, y) -> tuple[float, float]:
    x, y = np.asarray(x), np.asarray(y)
    return float(x @ R @ y), float(x @ C @ y)


ANY = [0.0, 0.0, 1.0]
UNI = [1 / 3] * 3


def test_expected_returns_are_exact() -> None:
    g = game()
    got = expected_returns(g, [tabular(table(g)), uniform()])
    assert got == pytest.approx(bilinear(P_ROW, UNI), abs=1e-12)
    assert expected_returns(g, [fixed([0, 0]), fixed([1, 1])]) == pytest.approx([0.0, 2.0])


def test_cfr_gain_by_hand() -> None:
    g = game()
    gains = cfr_gain(g, tabular(table(g)), fixed([2, 2]))
    # all `any`: (1, 1). P0 switches: 0.5*4 + 0.5*4 = 4 -> +3. P1 switches: 2*.25 + 2*.75 -> +1.
    assert gains == pytest.approx([3.0, 1.0], abs=1e-12)


def test_head_to_head_by_hand() -> None:
    g = game()
    strategies = {"cfr": tabular(table(g)), "any": fixed([2, 2]), "a": fixed([0, 0])}
    got = head_to_head(g, strategies)
    mixed = {"cfr": (P_ROW, P_COL), "any": (ANY, ANY), "a": ([1, 0, 0], [1, 0, 0])}
    for r, (r0, r1) in mixed.items():
        for c, (c0, c1) in mixed.items():
            v0 = bilinear(r0, c1)[0]  # player 0 plays row, player 1 plays column
            v1 = bilinear(c0, r1)[1]  # player 1 plays row, player 0 plays column
            assert got[r][c] == pytest.approx((v0 + v1) / 2, abs=1e-12), (r, c)
    assert got["any"]["any"] == pytest.approx(1.0)
    assert got["cfr"]["any"] - got["any"]["any"] == pytest.approx(2.0)  # mean CFR gain
    assert got["a"]["a"] == pytest.approx(2.0)  # (R[a,a] + C[a,a]) / 2


def test_analyze_names_baselines_and_matches_parts() -> None:
    g = game()
    values = analyze(g, table(g), [LABELS, LABELS], [2, 2])
    assert list(values.head_to_head) == ["cfr", "any", "always:a", "always:b", "uniform"]
    assert values.cfr_gain == pytest.approx(2.0)
    assert values.cfr_gain_per_player == pytest.approx([3.0, 1.0])
    assert values.value_any == pytest.approx([1.0, 1.0])
    assert values.value_cfr == pytest.approx(bilinear(P_ROW, P_COL))
    assert values.first_instruction[0] == pytest.approx({"a": 0.5, "b": 0.5, "any": 0.0})
    assert values.first_instruction[1] == pytest.approx({"a": 0.25, "b": 0.75, "any": 0.0})
    # NashConv = sum of best-response gains; a one-shot game's best reply is a pure action.
    br0 = max(R @ np.asarray(P_COL)) - bilinear(P_ROW, P_COL)[0]
    br1 = max(np.asarray(P_ROW) @ C) - bilinear(P_ROW, P_COL)[1]
    assert values.nash_conv == pytest.approx(br0 + br1, abs=1e-12)
    # By hand: player 0 gains 1.75 - 1.25, player 1 gains 2 - 1.25; payoffs span [0, 4].
    assert values.nash_conv == pytest.approx(1.25)
    assert values.nash_conv_normalized == pytest.approx(1.25 / (2 * 4))  # mean gain per range
    assert values.cfr_gain_normalized == pytest.approx(2.0 / 4)


def test_normalised_nash_conv_is_the_mean_gain_per_player_over_the_range() -> None:
    # Matching pennies, payoffs in [-1, 1], player 0 wins on a mismatch. Both always play H:
    # player 0 loses 1 and gains the whole range (2) by switching; player 1 gains nothing.
    payoff = [[-1.0, 1.0], [1.0, -1.0]]
    g = cached_tree(pyspiel.convert_to_turn_based(pyspiel.create_matrix_game(
        "mp", "mp", ["H", "T"], ["H", "T"], payoff, [[-x for x in r] for r in payoff])))
    always_h = policy_table(g, lambda s: [(0, 1.0), (1, 0.0)])
    values = analyze(g, always_h, [["H", "T"], ["H", "T"]], [0, 0])
    assert values.nash_conv == pytest.approx(2.0)  # player 0 gains 2, player 1 already wins
    assert values.nash_conv_normalized == pytest.approx(2.0 / (2 * 2))
    assert 0.0 <= values.nash_conv_normalized <= 1.0


def test_baseline_names_never_collide_with_cfr_or_uniform() -> None:
    from gtsteer.solvers import baseline_strategies

    labels = [["cfr", "uniform", "any"], ["cfr", "uniform", "any"]]
    strategies = baseline_strategies({}, labels, [2, 2])
    assert list(strategies) == ["cfr", "any", "always:cfr", "always:uniform", "uniform"]
    # An instruction one player lacks gets no row instead of a silently uniform one.
    partial = baseline_strategies({}, [["x", "y", "any"], ["x", "any"]], [2, 1])
    assert list(partial) == ["cfr", "any", "always:x", "uniform"]


def test_policy_missing_a_state_and_illegal_fixed_action_are_errors() -> None:
    from gtsteer.solvers import StrategyError

    g = game()
    with pytest.raises(StrategyError, match="no entry for player 0"):
        expected_returns(g, [tabular({}), uniform()])
    with pytest.raises(StrategyError, match="action 7 is not legal for player 0"):
        expected_returns(g, [fixed([7, 0]), uniform()])


def test_first_decision_weights_chance() -> None:
    # Kuhn poker: player 0 bets (action 1) only holding the king (card 2): P(bet) = 1/3.
    g = cached_tree(pyspiel.load_game("kuhn_poker"))

    def bet_on_king(state):
        holds_king = state.information_state_string().startswith("2")
        return [(0, 0.0), (1, 1.0)] if holds_king else [(0, 1.0), (1, 0.0)]

    dist = first_decision_distribution(g, [bet_on_king, uniform()])
    assert dist[0] == pytest.approx({0: 2 / 3, 1: 1 / 3})
    assert dist[1] == pytest.approx({0: 0.5, 1: 0.5})


def test_mean_ci_student_t() -> None:
    ci = mean_ci([1.0, 2.0, 3.0])
    half = 4.302652729911275 / np.sqrt(3)  # t_{0.975, 2} * sem
    assert (ci.mean, ci.n) == (2.0, 3)
    assert ci.ci_low == pytest.approx(2.0 - half) and ci.ci_high == pytest.approx(2.0 + half)
    one = mean_ci([0.5])
    assert (one.mean, one.ci_low, one.ci_high) == (0.5, None, None)
    flat = mean_ci([0.2, 0.2])
    assert (flat.ci_low, flat.ci_high) == (0.2, 0.2)


def test_t_interval_is_element_wise_along_the_axis() -> None:
    values = np.array([[1.0, 0.5], [3.0, 0.5], [5.0, 0.5]])  # column 0: 1, 3, 5 (sd 2)
    low, high = t_interval(values, axis=0)
    half = 4.302652729911275 * 2.0 / np.sqrt(3)
    assert (low[0], high[0]) == pytest.approx((3.0 - half, 3.0 + half))
    assert (low[1], high[1]) == (0.5, 0.5)  # no spread: no width, not nan
    ci = mean_ci(values[:, 0])
    assert (ci.ci_low, ci.ci_high) == (low[0], high[0])
    assert t_interval(values[:1], axis=0) is None


def test_wilson_share_and_interval() -> None:
    share = wilson(8, 10)
    assert (share.correct, share.n, share.accuracy) == (8, 10, 0.8)
    assert (share.ci_low, share.ci_high) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_mcnemar_exact_is_a_binomial_test_on_the_discordant_pairs() -> None:
    # 8 against 1 discordant: P = 2 * (C(9,8) + C(9,9)) / 2**9 = 20 / 512.
    assert mcnemar_exact(8, 1) == pytest.approx(20 / 512)
    assert mcnemar_exact(1, 8) == pytest.approx(20 / 512)
    assert mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert mcnemar_exact(0, 0) == 1.0


def test_side_of_zero_reads_where_an_interval_lies() -> None:
    assert [side_of_zero(0.1, 0.5), side_of_zero(-0.5, -0.1), side_of_zero(-0.1, 0.1),
            side_of_zero(0.0, 0.3), side_of_zero(None, None)] == [1, -1, 0, 0, None]
    assert mean_ci([1.0, 1.2, 0.9]).side == 1
    assert mean_ci([-1.0, 1.0]).side == 0
    assert mean_ci([2.0]).side is None  # one value: no interval
