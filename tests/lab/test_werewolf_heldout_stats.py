"""The statistics of the lab's `werewolf-heldout` (lab/studies/werewolf_heldout_stats.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gtsteer.solvers.heldout import VersusBaseline
from lab.studies.werewolf_heldout_stats import find_stat, gain_stats


def _versus(replay: str, baseline: str, policy: float, base: float) -> VersusBaseline:
    return VersusBaseline(player=0, replay=replay, baseline=baseline, policy_value=policy,
                          baseline_value=base, gain=policy - base)


def test_gain_stats_pair_per_state_and_split_by_team() -> None:
    def row(team: str, gain: float) -> SimpleNamespace:
        cells = [_versus(p, b, 1.0 + gain, 1.0) for p in ("cfr", "distilled")
                 for b in ("unsteered", "uniform")]
        return SimpleNamespace(team=team, versus=cells, versus_in_sample=cells)

    stats = gain_stats([row("village", 1.0), row("village", 3.0), row("werewolves", 2.0)])
    s = find_stat(stats, "cfr", "unsteered")
    assert s is not None and s.gain.mean == pytest.approx(2.0) and s.policy_value == 3.0
    village = find_stat(stats, "cfr", "unsteered", team="village")
    assert village is not None and village.gain.mean == pytest.approx(2.0)
    assert len(stats) == 3 * 2 * 2 * 2  # teams x samples x policies x baselines
