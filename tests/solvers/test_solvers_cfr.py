"""CFR / CFR+ wrappers: the C++ path on cached trees, the Python fallback, a known equilibrium."""

from __future__ import annotations

import pyspiel
import pytest
from open_spiel.python.games import kuhn_poker  # noqa: F401  (registers python_kuhn_poker)

from gtsteer.solvers import expected_returns, nash_conv, solve_cfr
from gtsteer.solvers.cfr import _solve_python, cached_tree

# Row: A, B, any; column: C, D, any. Zero-sum; on {A,B}x{C,D} the unique equilibrium is
# row (1/3, 2/3), column (2/3, 1/3), value 2/3. `any` is strictly dominated for both.
ROW_PAYOFF = [[0.0, 2.0, 3.0], [1.0, 0.0, 3.0], [-1.0, -1.0, 0.0]]


def mixed_game() -> pyspiel.Game:
    neg = [[-x for x in row] for row in ROW_PAYOFF]
    matrix = pyspiel.create_matrix_game(
        "mixed", "mixed", ["A", "B", "any"], ["C", "D", "any"], ROW_PAYOFF, neg
    )
    return pyspiel.convert_to_turn_based(matrix)


def by_player(result) -> dict[int, list[float]]:
    out = {}
    for key, probs in result.policy.items():
        player = 0 if "Current player: 0" in key else 1
        out[player] = [p for _, p in probs]
    return out


@pytest.mark.parametrize("solver", ["cfr", "cfr+"])
def test_python_game_runs_on_cpp_cached_tree(solver: str) -> None:
    game = pyspiel.load_game("python_kuhn_poker")
    result = solve_cfr(game, solver=solver, iterations=2000)
    assert result.backend.startswith("open_spiel C++")
    assert str(result.game).startswith("cached_tree(")
    assert result.info_states == 12
    assert nash_conv(result.game, result.policy) < 0.01


@pytest.mark.parametrize("solver", ["cfr", "cfr+"])
def test_recovers_known_mixed_equilibrium(solver: str) -> None:
    result = solve_cfr(mixed_game(), solver=solver, iterations=2000)
    probs = by_player(result)
    assert probs[0] == pytest.approx([1 / 3, 2 / 3, 0.0], abs=0.02)
    assert probs[1] == pytest.approx([2 / 3, 1 / 3, 0.0], abs=0.02)
    assert nash_conv(result.game, result.policy) < 0.01


def test_nash_conv_shrinks_with_iterations() -> None:
    few = solve_cfr(mixed_game(), solver="cfr", iterations=10)
    many = solve_cfr(mixed_game(), solver="cfr", iterations=3000)
    assert nash_conv(many.game, many.policy) < nash_conv(few.game, few.policy) / 5


def test_python_fallback_matches_cpp() -> None:
    game = pyspiel.load_game("python_kuhn_poker")
    cpp = solve_cfr(game, solver="cfr", iterations=50)
    py = _solve_python(game, solver="cfr", iterations=50)
    assert py.backend.startswith("open_spiel python")
    assert py.policy.keys() == cpp.policy.keys()
    for key, probs in cpp.policy.items():
        assert [p for _, p in py.policy[key]] == pytest.approx([p for _, p in probs], abs=1e-9)


def test_cached_tree_keeps_values_and_information_states() -> None:
    game = pyspiel.load_game("kuhn_poker")
    tree = cached_tree(game)
    assert cached_tree(tree) is tree
    uniform = [lambda s: [(a, 1 / len(s.legal_actions())) for a in s.legal_actions()]] * 2
    # Uniform play in Kuhn poker: player 0 wins 1/8 on average (exact, by traversal).
    assert expected_returns(tree, uniform) == pytest.approx([0.125, -0.125])
    assert expected_returns(game, uniform) == pytest.approx([0.125, -0.125])
    keys = sorted(solve_cfr(game, iterations=1).policy)
    assert len(keys) == 12 and keys == sorted(solve_cfr(tree, iterations=1).policy)


@pytest.mark.parametrize(
    ("kwargs", "field"), [({"solver": "dcfr"}, "solver"), ({"iterations": 0}, "iterations")]
)
def test_bad_arguments_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        solve_cfr(mixed_game(), **kwargs)
