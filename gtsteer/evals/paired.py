"""Paired comparisons and win rates: one policy's value minus a baseline's on the same seeds,
states or instances (the drivers in `gtsteer.runs` collect the values and write the results).

- `paired_difference`: a Werewolf condition against the static one, seed by seed, beside each
  condition's `win_rates` and `votes_on_wolves` (`werewolf evaluate`);
- `live_stats`: each player's policy against each baseline over fresh instances (`evaluate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from gtsteer.solvers.metrics import (
    MeanCI,
    TeamRate,
    bootstrap_interval,
    instances_for_power,
    mcnemar_exact,
    mean_ci,
    wilson,
)
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameState


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


class PairedDifference(BaseModel):
    """One condition against the static one on the same seeds (condition minus static)."""

    condition: str
    seeds: int
    #: Seeds the village won under the condition only, and under static only (McNemar's b, c).
    condition_only_wins: int
    static_only_wins: int
    village_win_difference: float
    #: 95% paired bootstrap interval over seeds (None: fewer than two seeds).
    low: float | None
    high: float | None
    #: Exact two-sided McNemar test (a binomial test on the discordant seeds).
    mcnemar_p: float
    #: The village's votes on wolves per vote, per seed (seeds where it voted in both), the
    #: mean difference and its paired bootstrap interval.
    votes_on_wolves_difference: float | None
    votes_low: float | None
    votes_high: float | None
    #: Seeds a t-test would need to exclude 0 at 80% power if the difference and spread stay
    #: as measured (None: no difference measured).
    seeds_to_exclude_zero: int | None


def paired_difference(condition: str, won: Sequence[bool], won_static: Sequence[bool],
                      on_wolves: Sequence[float | None],
                      on_wolves_static: Sequence[float | None]) -> PairedDifference:
    """Seed g of each list is the same seed: the village's wins and its share of votes on
    wolves (None: no village vote) under the condition and under static."""
    diffs = [float(a) - float(b) for a, b in zip(won, won_static, strict=True)]
    interval = bootstrap_interval(diffs)
    votes = [x - y for x, y in zip(on_wolves, on_wolves_static, strict=True)
             if x is not None and y is not None]
    vote_interval = bootstrap_interval(votes)
    b, c = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return PairedDifference(
        condition=condition, seeds=len(diffs), condition_only_wins=b, static_only_wins=c,
        village_win_difference=_mean(diffs),
        low=interval[0] if interval else None, high=interval[1] if interval else None,
        mcnemar_p=mcnemar_exact(b, c),
        votes_on_wolves_difference=_mean(votes) if votes else None,
        votes_low=vote_interval[0] if vote_interval else None,
        votes_high=vote_interval[1] if vote_interval else None,
        seeds_to_exclude_zero=instances_for_power(diffs),
    )


class LiveStat(BaseModel):
    """A player's gain over a baseline across instances (mean, 95% Student-t interval)."""

    player: int
    role: str
    baseline: str
    gain: MeanCI
    policy_value: float
    baseline_value: float


class LiveVersus(Protocol):
    @property
    def player(self) -> int: ...
    @property
    def baseline(self) -> str: ...
    @property
    def policy_value(self) -> float: ...
    @property
    def baseline_value(self) -> float: ...
    @property
    def gain(self) -> float: ...


def live_stats(versus: Sequence[LiveVersus], roles: Sequence[str], baselines: Sequence[str]
               ) -> list[LiveStat]:
    """Per player and baseline: the mean gain over instances with its 95% Student-t interval
    (`versus`: every instance's cells)."""
    out = []
    for p, role in enumerate(roles):
        for baseline in baselines:
            pairs = [v for v in versus if v.player == p and v.baseline == baseline]
            if pairs:
                out.append(LiveStat(
                    player=p, role=role, baseline=baseline, gain=mean_ci([v.gain for v in pairs]),
                    policy_value=_mean([v.policy_value for v in pairs]),
                    baseline_value=_mean([v.baseline_value for v in pairs])))
    return out


def win_rates(finals: Sequence[GameState]) -> dict[str, TeamRate]:
    """Each team's wins over `finals` with a 95% Wilson interval."""
    return {team: wilson(sum(s.winner == team for s in finals), len(finals))
            for team in ("village", "werewolves")}


def votes_on_wolves(finals: Sequence[GameState]) -> float | None:
    """The share of village-side votes that hit a werewolf, pooled over `finals` (None: no
    such vote)."""
    votes = [(s, v) for s in finals for v in s.votes if s.player(v.voter).role is not Role.WEREWOLF]
    if not votes:
        return None
    return sum(s.player(v.target).role is Role.WEREWOLF for s, v in votes) / len(votes)
