"""The statistics of `python -m lab werewolf-heldout`: each playstyle policy against each
baseline over held-out states, paired per state, with the Student-t and BCa intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from gtsteer.solvers.heldout import VersusBaseline
from gtsteer.solvers.metrics import MeanCI, bootstrap_interval, instances_for_power, mean_ci
from gtsteer.werewolf.playstyles import UNSTEERED

#: The policies, baselines and sample kinds of the study.
POLICIES = ("cfr", "distilled")
BASELINES = (UNSTEERED, "uniform")
SAMPLES = ("fresh", "in-sample")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


class GainStat(BaseModel):
    """One policy's value minus one baseline's, paired per state, over the rows of one team
    of first speakers (or all): mean with the 95% Student-t interval (`gain`) and the 95% BCa
    bootstrap interval of `solvers.metrics`."""

    policy: str  # one of POLICIES
    baseline: str  # one of BASELINES
    samples: str  # one of SAMPLES
    team: str  # "all", "village" or "werewolves" (the first speaker's team)
    gain: MeanCI
    bootstrap: tuple[float, float] | None = None
    policy_value: float
    baseline_value: float
    #: States a t-test would need to exclude 0 with 80% power at this mean and spread.
    states_needed: int | None = None


class HeldOutState(Protocol):
    """What `gain_stats` reads of one held-out state's row."""

    @property
    def team(self) -> str: ...
    @property
    def versus(self) -> Sequence[VersusBaseline]: ...
    @property
    def versus_in_sample(self) -> Sequence[VersusBaseline]: ...


def gain_stats(rows: Sequence[HeldOutState]) -> list[GainStat]:
    """Each policy against each baseline, fresh and in-sample, over all rows and per team of
    the first speaker: paired per state, with both intervals."""
    out = []
    for team in ["all", *sorted({r.team for r in rows})]:
        chosen = [r for r in rows if team in ("all", r.team)]
        for samples in SAMPLES if chosen else ():
            for policy in POLICIES:
                for baseline in BASELINES:
                    pairs = [next(v for v in (r.versus if samples == "fresh"
                                              else r.versus_in_sample)
                                  if v.replay == policy and v.baseline == baseline)
                             for r in chosen]
                    gains = [v.gain for v in pairs]
                    out.append(GainStat(
                        policy=policy, baseline=baseline, samples=samples, team=team,
                        gain=mean_ci(gains), bootstrap=bootstrap_interval(gains),
                        policy_value=_mean([v.policy_value for v in pairs]),
                        baseline_value=_mean([v.baseline_value for v in pairs]),
                        states_needed=instances_for_power(gains)))
    return out


def find_stat(stats: Sequence[GainStat], policy: str, baseline: str, samples: str = "fresh",
              team: str = "all") -> GainStat | None:
    return next((s for s in stats if (s.policy, s.baseline, s.samples, s.team)
                 == (policy, baseline, samples, team)), None)
