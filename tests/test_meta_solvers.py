"""Meta-solvers against textbook answers (per-player tensors, never symmetrised)."""

from __future__ import annotations

import numpy as np
import pytest

from gtsteer.solvers.meta import (
    MetaGameError,
    deviation_payoffs,
    max_welfare_cce,
    nash_bargaining,
    regrets,
    replicator_dynamics,
)


def two_player(u0: list[list[float]], u1: list[list[float]]) -> np.ndarray:
    return np.array([u0, u1], dtype=float)


RPS = two_player(
    [[0, -1, 1], [1, 0, -1], [-1, 1, 0]],
    [[0, 1, -1], [-1, 0, 1], [1, -1, 0]],
)
# Battle of the sexes: both want to meet; row prefers opera (0), column prefers football (1).
BOS = two_player([[2, 0], [0, 1]], [[1, 0], [0, 2]])
# Prisoner's dilemma: 0 = cooperate, 1 = defect.
PD = two_player([[3, 0], [5, 1]], [[3, 5], [0, 1]])
# Chicken: 0 = dare, 1 = swerve. Max-welfare CCE: 1/4 (D,S), 1/4 (S,D), 1/2 (S,S): welfare 10.5.
CHICKEN = two_player([[0, 7], [2, 6]], [[0, 2], [7, 6]])


def test_rps_replicator_dynamics_is_uniform():
    sol = replicator_dynamics(RPS)
    for m in sol.marginals:
        np.testing.assert_allclose(m, [1 / 3] * 3, atol=1e-3)
    assert regrets(RPS, sol.joint).sum() < 1e-2


def test_rps_max_entropy_cce_is_the_uniform_joint():
    sol = max_welfare_cce(RPS)
    np.testing.assert_allclose(sol.joint, np.full((3, 3), 1 / 9), atol=1e-4)
    for m in sol.marginals:
        np.testing.assert_allclose(m, [1 / 3] * 3, atol=1e-4)


def test_battle_of_the_sexes_max_welfare_cce_is_on_the_coordinated_outcomes():
    for tie_break in ("entropy", "none"):
        sol = max_welfare_cce(BOS, tie_break=tie_break)
        assert sol.joint[0, 0] + sol.joint[1, 1] == pytest.approx(1.0, abs=1e-6)
        assert sol.welfare(BOS) == pytest.approx(3.0, abs=1e-6)
    # the entropy tie-break splits the two coordinated outcomes evenly
    np.testing.assert_allclose(max_welfare_cce(BOS).joint, [[0.5, 0.0], [0.0, 0.5]], atol=1e-4)


def test_prisoners_dilemma_is_defect_defect():
    for sol in (replicator_dynamics(PD), max_welfare_cce(PD)):
        assert sol.joint[1, 1] == pytest.approx(1.0, abs=2e-3), sol.concept
        np.testing.assert_allclose(sol.payoffs(PD), [1.0, 1.0], atol=1e-2)


def test_prisoners_dilemma_bargaining_from_defection_is_cooperation():
    sol = nash_bargaining(PD, disagreement=[1.0, 1.0])
    np.testing.assert_allclose(sol.payoffs(PD), [3.0, 3.0], atol=1e-4)


def test_chicken_max_welfare_cce_value():
    sol = max_welfare_cce(CHICKEN)
    assert sol.welfare(CHICKEN) == pytest.approx(10.5, abs=1e-5)
    np.testing.assert_allclose(sol.payoffs(CHICKEN), [5.25, 5.25], atol=1e-4)
    assert regrets(CHICKEN, sol.joint).max() < 1e-5  # the tie-break allows 1e-7 x range


def test_bargaining_matches_the_closed_form():
    # Outcomes (2, 0) and (0, 1) (and (0, 0) off the diagonal). Pareto frontier x/2 + y = 1;
    # with d = (0.2, 0) the NBS maximises (x - 0.2) y: y = 0.45, x = 1.1, i.e. 55% on (2, 0).
    game = two_player([[2, 0], [0, 0]], [[0, 0], [0, 1]])
    sol = nash_bargaining(game, disagreement=[0.2, 0.0])
    np.testing.assert_allclose(sol.payoffs(game), [1.1, 0.45], atol=1e-4)
    np.testing.assert_allclose(sol.joint, [[0.55, 0.0], [0.0, 0.45]], atol=1e-4)
    np.testing.assert_allclose(sol.marginals[0], [0.55, 0.45], atol=1e-4)
    # symmetric disagreement: the symmetric closed form x = 1, y = 0.5
    np.testing.assert_allclose(nash_bargaining(game, [0.0, 0.0]).payoffs(game), [1.0, 0.5],
                               atol=1e-4)


def test_bargaining_without_a_strict_improvement_reports_the_egalitarian_point():
    # zero-sum: nobody can gain without the other losing
    sol = nash_bargaining(RPS, disagreement=[0.0, 0.0])
    np.testing.assert_allclose(sol.payoffs(RPS), [0.0, 0.0], atol=1e-9)
    assert "disagreement" in sol.note


def test_three_player_asymmetric_game_keeps_per_player_tensors():
    # player 2's payoff ignores the others; it strictly prefers its second strategy
    rng = np.random.default_rng(0)
    stack = rng.normal(size=(3, 2, 3, 2))
    stack[2] = np.broadcast_to(np.array([0.0, 1.0]), (2, 3, 2))
    for sol in (replicator_dynamics(stack), max_welfare_cce(stack)):
        assert sol.joint.shape == (2, 3, 2)
        assert sol.marginals[2][1] == pytest.approx(1.0, abs=2e-3), sol.concept
        assert [m.size for m in sol.marginals] == [2, 3, 2]
    cce = max_welfare_cce(stack)
    for i in range(3):
        gains = deviation_payoffs(stack, cce.joint, i) - cce.payoffs(stack)[i]
        assert gains.max() < 1e-5


def test_bad_stacks_are_refused_with_the_shape():
    with pytest.raises(MetaGameError, match="shape"):
        max_welfare_cce(np.zeros((3, 2, 2)))
    with pytest.raises(MetaGameError, match="NaN"):
        replicator_dynamics(np.full((2, 2, 2), np.nan))
    with pytest.raises(MetaGameError, match="disagreement"):
        nash_bargaining(BOS, disagreement=[0.0])
