"""The DIM-vs-LLM meta-game's closed-form symmetric equilibria, on hand-made tables."""

from __future__ import annotations

import pytest

from gtsteer.imitation.metagame import meta_game, symmetric_equilibria


@pytest.mark.parametrize(
    ("table", "selected", "equilibria"),
    [
        ([[2, 3], [1, 0]], 1.0, [1.0]),  # DIM strictly dominant
        ([[0, -1], [1, 0]], 0.0, [0.0]),  # LLM strictly dominant
        # Hawk-dove: unique mixed p* = y / (y - x) with x = 0-2 = -2, y = 3-1 = 2 -> 0.5; and
        # an asymmetric one: x = -1, y = 3 -> 0.75 (the paper's fruit number, by construction).
        ([[0, 3], [2, 1]], 0.5, [0.5]),
        ([[1, 4], [2, 1]], 0.75, [0.75]),
        # Coordination: three equilibria; from 50/50 the dynamics go to the larger basin.
        ([[3, 0], [1, 1]], 1.0, [0.0, 1 / 3, 1.0]),
        ([[1, 0], [0, 3]], 0.0, [0.0, 0.75, 1.0]),
    ],
)
def test_symmetric_equilibria(table, selected, equilibria) -> None:
    got, eqs = symmetric_equilibria(table)
    assert got == pytest.approx(selected)
    assert eqs == pytest.approx(equilibria)


def test_flat_table_has_every_p_as_equilibrium() -> None:
    assert symmetric_equilibria([[1, 1], [1, 1]]) == (0.5, None)


def test_meta_game_averages_players_and_keeps_their_tables() -> None:
    # Player 0 gains from DIM, player 1 loses from it: the symmetric table averages them.
    per_player = [[[2, 2], [0, 0]], [[0, 0], [1, 1]]]
    game = meta_game(per_player)
    assert game.table == [[1.0, 1.0], [0.5, 0.5]]
    assert game.per_player == [[[2.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]]]
    assert game.dim_probability == 1.0
    with pytest.raises(ValueError, match="expected shape"):
        meta_game([[1, 2], [3, 4]])


def test_probability_interval_stays_in_range() -> None:
    from gtsteer.imitation.evaluate import _metric

    m = _metric([0.0, 1.0, 0.0], bounds=(0.0, 1.0))
    assert m.mean == pytest.approx(1 / 3) and m.ci_low == 0.0 and m.ci_high == 1.0
    unclipped = _metric([0.0, 1.0, 0.0])
    assert unclipped.ci_low < 0.0 and unclipped.ci_high > 1.0
