"""Table 1 says what it measures (issue 57, item 4; review science-0832c41, M4, M5, L1-L3):
the S column, Holm-adjusted exploratory cells, the exact sign test, the minimum detectable
effect, the bootstrap bound within Monte Carlo error of 0, and `--steering-samples`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from gtsteer.solvers.metrics import (
    bootstrap_bound_error,
    holm,
    min_detectable_effect,
    sign_test,
)

ROOT = Path(__file__).resolve().parent.parent
MEETING = ROOT / "docs" / "data" / "table1" / "schedule_meeting_dow" / "table1_row.json"


def test_holm_equals_a_hand_computation_on_three_p_values() -> None:
    # sorted: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # capped at 1, and order kept
    assert holm([0.5, 0.2]) == pytest.approx([0.5, 0.4])
    assert holm([0.9, 0.8, 0.7]) == pytest.approx([1.0, 1.0, 1.0])


def test_sign_test_on_a_known_vector() -> None:
    s = sign_test([1, 2, 3, -1, 0, 5, 6, 7, 8, 9])
    assert (s.positive, s.negative, s.ties) == (8, 1, 1)
    # exact: 2 (C(9,8) + C(9,9)) / 2^9 = 20/512
    assert s.p == pytest.approx(20 / 512)
    # a tolerance makes near-zero differences ties
    assert sign_test([1e-4, -1e-4, 1.0], tie=1e-3).ties == 2
    assert sign_test([0.0, 0.0]).p == 1.0


def test_min_detectable_effect_formula() -> None:
    sd, n = 2.0, 25
    by_hand = (stats.t.ppf(0.975, 24) + stats.t.ppf(0.8, 24)) * sd / 5
    assert by_hand == pytest.approx(1.1683, abs=1e-3)
    mde = min_detectable_effect(sd, n)
    assert mde == pytest.approx(by_hand)
    # and a t-test has about 80% power at that effect (noncentral t)
    nc = mde / (sd / math.sqrt(n))
    crit = stats.t.ppf(0.975, n - 1)
    power = stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)
    assert power == pytest.approx(0.8, abs=0.01)
    assert min_detectable_effect(1.0, 1) is None


def test_the_meeting_bootstrap_upper_bound_is_within_monte_carlo_error_of_zero() -> None:
    values = json.loads(MEETING.read_text())["row"]["per_instance"][
        "versus_player0_opening_greedy_others_any"]
    err = bootstrap_bound_error(values)
    assert err is not None
    # the review: SD about 0.0096 over 40 seeds; the saved bound is -0.006
    assert 0.004 < err[1] < 0.02 and abs(-0.0058) < 2 * err[1]
