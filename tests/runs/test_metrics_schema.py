"""One definition of each normalised number (issue 58 step 5): summary.json's and Table 1's
divide by the config's payoff range, never by one instance's narrower utility bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtsteer.binding.shipped import resolve_config
from gtsteer.domains import load_spec
from gtsteer.runs.solve_schema import GameRecord, SolveSummary
from lab.studies import table1

CONFIG = resolve_config("trade_fruit_tone")


@pytest.fixture(scope="module")
def fruit(tmp_path_factory: pytest.TempPathFactory) -> tuple[SolveSummary, table1.Row, Path]:
    out = tmp_path_factory.mktemp("fruit")
    row = table1.measure(CONFIG, "fake", games=2, samples=0, out=out, progress=False).row
    folder = out / row.domain
    return SolveSummary.model_validate_json((folder / "summary.json").read_text()), row, folder


def test_summary_normalises_by_the_config_range_not_the_instance_bounds(fruit) -> None:
    summary, _, folder = fruit
    spec = load_spec(CONFIG)
    span = spec.payoff.max - spec.payoff.min
    records = [GameRecord.model_validate_json(p.read_text())
               for p in sorted((folder / "games").glob("*.json"))]
    # The case the one definition matters for: the instances' own ranges are narrower.
    assert all(r.payoff_bounds[1] - r.payoff_bounds[0] < span for r in records)
    assert summary.payoff_bounds == (spec.payoff.min, spec.payoff.max)
    m = summary.metrics
    assert m is not None
    gains = m.cfr_gain.per_instance
    assert len(gains) == 2 and any(g != 0 for g in gains)
    assert m.cfr_gain_normalized.per_instance == pytest.approx([g / span for g in gains])
    assert m.nash_conv_normalized.per_instance == pytest.approx(
        [c / (spec.num_players * span) for c in m.nash_conv.per_instance])
    from gtsteer.solvers.metrics import normalized  # the one definition both read

    assert [normalized(g, span) for g in gains] == m.cfr_gain_normalized.per_instance


def test_table1_reads_the_summary_definitions(fruit) -> None:
    summary, row, _ = fruit
    m = summary.metrics
    assert row.payoff_span == summary.payoff_bounds[1] - summary.payoff_bounds[0]
    for name in ("cfr_gain_normalized", "nash_conv_normalized"):
        mine, theirs = getattr(row, name), getattr(m, name)
        assert (mine.mean, mine.ci_low, mine.ci_high) == (theirs.mean, theirs.ci_low,
                                                          theirs.ci_high)
