"""Statistics live in `gtsteer.evals`; `gtsteer.runs` keeps drivers only (issue 58 step 4)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

import gtsteer.runs
from gtsteer.evals.paired import live_stats, paired_difference
from gtsteer.evals.reward import ScoredCase, path_error, reading_accuracy
from gtsteer.evals.verdict import verdict_cell, win_totals
from gtsteer.solvers import metrics

#: The functions of `solvers.metrics` that compute a statistic from values (its models may be
#: imported, and `side_of_zero`, which reads an interval a renderer shows).
STATISTICS = {name for name in dir(metrics) if callable(getattr(metrics, name))
              and name[0].islower() and getattr(getattr(metrics, name), "__module__", "")
              == metrics.__name__} - {"nash_conv", "cfr_gain", "head_to_head",
                                      "deviation_values", "side_of_zero"}


def test_no_driver_module_imports_a_statistics_function() -> None:
    found = []
    for path in sorted(Path(gtsteer.runs.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == metrics.__name__:
                found += [f"{path.name}: {a.name}" for a in node.names if a.name in STATISTICS]
    assert "mean_ci" in STATISTICS and "wilson" in STATISTICS
    assert found == []


def test_a_paired_difference_counts_discordant_seeds_and_pairs_the_votes() -> None:
    d = paired_difference("village steered", [True, True, False, True], [False, True, False, False],
                          [0.5, None, 1.0, 0.0], [0.0, 0.5, None, 0.5])
    assert (d.seeds, d.condition_only_wins, d.static_only_wins) == (4, 2, 0)
    assert d.village_win_difference == 0.5
    assert d.mcnemar_p == pytest.approx(0.5)  # both discordant seeds one way: 2 x 1/4
    assert d.votes_on_wolves_difference == 0.0  # seeds 0 and 3 only: +0.5 and -0.5


def test_live_stats_average_each_player_against_each_baseline() -> None:
    cells = [SimpleNamespace(player=p, baseline="any", policy_value=v, baseline_value=0.0,
                             gain=v) for p, v in ((0, 1.0), (0, 3.0), (1, -1.0))]
    stats = live_stats(cells, ["Alice", "Bob"], ["any", "greedy"])
    assert [(s.role, s.baseline, s.gain.mean) for s in stats] == [("Alice", "any", 2.0),
                                                                 ("Bob", "any", -1.0)]


def test_path_error_is_the_mean_error_per_range_and_the_sign_flips() -> None:
    case = ScoredCase(outcome="deal", instance=0, transcript="", facts={}, truth=[2.0, -1.0],
                      bounds=(-5.0, 5.0), predicted={"llm": [1.0, 1.0], "code": None},
                      failures={"code": "no answer"})
    e = path_error("llm", "all", [case, case])
    assert (e.cases, e.failures) == (2, 0)
    assert e.norm.mean == pytest.approx((0.1 + 0.2) / 2)
    assert e.sign_flips is not None and (e.sign_flips.correct, e.sign_flips.n) == (2, 4)
    assert path_error("code", "all", [case]).failures == 1


def test_reading_accuracy_counts_right_reads_of_one_kind() -> None:
    items = [SimpleNamespace(kind="agreed", correct={"p": True}, failures={}),
             SimpleNamespace(kind="none", correct={"p": False}, failures={"p": "timeout"})]
    acc = reading_accuracy("p", "agreed", items)
    assert acc.items == 1 and acc.accuracy is not None and acc.accuracy.correct == 1
    assert reading_accuracy("p", "all", items).failures == 1


def test_verdict_cells_and_totals() -> None:
    games = [SimpleNamespace(win=w, verdict=v, rounds=r)
             for w, v, r in ((True, "guilty", 2), (False, "innocent", 4))]
    cell = verdict_cell("naive", 0, 1.0, games, ["guilty", "innocent"])
    assert cell.verdicts == {"guilty": 1, "innocent": 1} and cell.mean_rounds == 3.0
    assert (cell.win.correct, cell.win.n) == (1, 2)
    total = win_totals({"naive": games + games[:1]})["naive"]
    assert (total.correct, total.n) == (2, 3)
