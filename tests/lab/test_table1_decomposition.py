"""The random-instruction baseline and the `any` -> random -> policy -> greedy decomposition,
on the saved meeting row (docs/data/table1): the numbers the review (science-0832c41, H1)
computed with its own code from the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.studies.table1_decomposition import decomposition, random_instruction_values

ROW = (Path(__file__).resolve().parents[2] / "docs" / "data" / "table1"
       / "schedule_meeting_dow" / "table1_row.json")


def saved() -> dict[str, list[float]]:
    return json.loads(ROW.read_text())["row"]["per_instance"]


def test_random_day_is_eight_uniform_minus_any_over_seven_per_instance() -> None:
    values = saved()
    uniform = values["versus_player0_opening_uniform_others_any_baseline_value"]
    any_ = values["versus_player0_opening_any_others_any_baseline_value"]
    random = random_instruction_values(uniform, any_, 8)
    assert len(random) == 60
    for r, u, a in zip(random, uniform, any_, strict=True):
        assert r == pytest.approx((8 * u - a) / 7, abs=1e-12)
    # uniform over 8 is 1/8 `any` and 7/8 a random day
    for r, u, a in zip(random, uniform, any_, strict=True):
        assert (a + 7 * r) / 8 == pytest.approx(u, abs=1e-12)


def test_meeting_decomposition_matches_the_reviews_numbers() -> None:
    d = decomposition(saved(), player=0, n_actions=8)
    assert d is not None
    means = {k: v.mean for k, v in d.values.items()}
    assert means == pytest.approx({"any": 0.508, "random": 1.386, "policy": 1.938,
                                   "greedy": 2.467}, abs=5e-4)
    expected = {"random - any": (0.877, 0.556, 1.199), "policy - random": (0.552, 0.084, 1.021),
                "greedy - random": (1.081, 0.585, 1.577), "policy - greedy": (-0.529, -1.131,
                                                                               0.074)}
    for step, (mean, low, high) in expected.items():
        got = d.steps[step]
        assert (got.mean, got.ci_low, got.ci_high) == pytest.approx((mean, low, high),
                                                                    abs=5e-4), step
    # the steps add up to the saved "vs any" cell: policy - any = 1.430
    total = d.steps["random - any"].mean + d.steps["policy - random"].mean
    assert total == pytest.approx(1.4298004719197326, abs=1e-9)


def test_a_row_without_opening_cells_has_no_decomposition() -> None:
    assert decomposition({"cfr_gain": [1.0]}, player=0, n_actions=8) is None
    with pytest.raises(ValueError, match="2 or more"):
        random_instruction_values([1.0], [0.0], 1)


def test_the_table1_page_shows_the_decomposition_from_the_saved_row() -> None:
    from lab.studies.table1 import StoredRow, decomposition_section

    row = StoredRow.model_validate_json(ROW.read_text()).row
    text = "\n".join(decomposition_section([row]))
    assert "| `schedule_meeting_dow` | 60 | proposer |" in text
    assert "any +0.508 → random +1.386 → policy +1.938 → greedy +2.467" in text
    assert "policy - random +0.552 [+0.084, +1.021]" in text
