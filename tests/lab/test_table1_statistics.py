"""Table 1 says what it measures (issue 57, item 4; review science-0832c41, M4, M5, L1-L3):
the S column, Holm-adjusted exploratory cells, the exact sign test, the minimum detectable
effect, the bootstrap bound within Monte Carlo error of 0, and `--steering-samples`."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from scipy import stats

from lab.studies.significance import (
    bootstrap_bound_error,
    holm,
    min_detectable_effect,
    sign_test,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "table1"
MEETING = DATA / "schedule_meeting_dow" / "table1_row.json"
CONFIGS = [ROOT / "gtsteer" / "configs" / f"{n}.yaml"
           for n in ("trade_fruit_tone", "trade_fruit_offer", "schedule_meeting_dow", "debate")]


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


def render_saved(tmp_path: Path, *extra: str) -> str:
    from lab.studies import table1

    shutil.copytree(DATA, tmp_path / "table1")
    doc = tmp_path / "TABLE1.md"
    code = table1.main(["--results", str(tmp_path / "table1"), "--render-only",
                        "--doc", str(doc), *extra, *map(str, CONFIGS)])
    assert code == 0
    return doc.read_text()


def table(text: str, heading: str) -> list[str]:
    """The lines of the first markdown table after `heading`."""
    after = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(after) if line.startswith("|"))
    out = []
    for line in after[start:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


def test_both_tables_show_samples_per_message(tmp_path: Path) -> None:
    text = render_saved(tmp_path)
    main = table(text, "# Table 1")
    assert "| S |" in main[0]
    meeting = next(line for line in main if line.startswith("| `schedule_meeting_dow`"))
    assert meeting.split("|")[main[0].split("|").index(" S ")].strip() == "2"
    fresh = table(text, "## Fresh samples: the policy against baselines")
    assert "| S |" in fresh[0]


def test_a_per_depth_sample_count_is_shown_as_a_list() -> None:
    from lab.studies.table1 import Row, samples_cell

    row = Row(config="gtsteer/configs/schedule_meeting_dow.yaml", domain="x", games=1,
              samples_per_message=[8, 2])
    assert samples_cell(row) == "[8, 2]"
    # a row saved before it kept S: the count of its config
    old = Row(config="gtsteer/configs/schedule_meeting_dow.yaml", domain="x", games=1)
    assert samples_cell(old) == "2"


def test_one_primary_contrast_per_domain_and_holm_on_the_rest(tmp_path: Path) -> None:
    text = render_saved(tmp_path)
    primary = table(text, "### Primary contrast")
    assert len(primary) == 2 + 2  # header, rule, fruit offers, meeting
    meeting = next(line for line in primary if "schedule_meeting_dow" in line)
    assert "-0.529 [-1.131, +0.074]" in meeting
    exploratory = table(text, "### Exploratory cells")
    assert "Holm" in exploratory[0]
    cells = exploratory[2:]
    assert len(cells) == 30 - 2  # every other cell of the 30
    # the review's count: after Holm over the cells, only meeting proposer vs `any` survives
    survivors = [c for c in cells if "**" in c.split("|")[9]]
    assert len(survivors) == 1 and "proposer" in survivors[0] and "`any`" in survivors[0]
    # the meeting responder vs greedy: t p = 0.0055, Holm-adjusted (x 27) 0.148
    assert "a t-test would need" not in text and "minimum detectable effect" in text
    assert "0.148" in next(c for c in cells if "meeting" in c
                           and "responder | nearest | `any` | greedy" in c)


def test_the_bootstrap_bound_decided_by_the_seed_reads_approximately_zero(
        tmp_path: Path) -> None:
    text = render_saved(tmp_path)
    # meeting responder (distilled, others `any`) vs `any`: BCa lower bound +0.004, whose
    # Monte Carlo SD over resample seeds is larger than half of it
    assert "| [≈ 0, +0.536] |" in text and "[+0.004, +0.536]" not in text
    # the review's seed-decided bound (-0.006) is the primary contrast's, shown by its t
    # interval only: one interval method
    assert "-0.006]" not in text


def test_skewed_fruit_cells_carry_sign_counts_and_sign_test(tmp_path: Path) -> None:
    text = render_saved(tmp_path)
    cells = table(text, "### Exploratory cells")
    fruit = next(c for c in cells if "trade_fruit_offer" in c and "nearest" in c
                 and "`policy`" in c and "| `any` |" in c)
    assert "sign p" in fruit


def test_samples_still_works_as_a_deprecated_alias(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    render_saved(tmp_path / "a", "--samples", "16")
    err = capsys.readouterr().err
    assert "--samples is deprecated" in err and "--steering-samples" in err
    text = (tmp_path / "a" / "TABLE1.md").read_text()
    assert "`trade_fruit_offer` |" in text and "`schedule_meeting_dow` | 60 / 60" not in text
    render_saved(tmp_path / "b", "--steering-samples", "16")
    assert "deprecated" not in capsys.readouterr().err

