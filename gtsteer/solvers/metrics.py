"""NashConv, CFR gain, head-to-head values and confidence intervals.

NashConv comes from OpenSpiel (`pyspiel.nash_conv`, best responses in C++ on the cached tree).
CFR gain, the head-to-head table and the CI over instances are not in OpenSpiel and are written
here on top of the exact evaluator; the intervals (Student-t, Wilson) come from scipy.stats,
imported where an interval is computed: importing it costs every CLI command ~0.6 s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np
import pyspiel
from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from gtsteer.solvers.cfr import CFRResult, PolicyTable, to_pyspiel_policy
from gtsteer.solvers.evaluate import Strategy, expected_returns


def nash_conv(game: pyspiel.Game, policy: PolicyTable | CFRResult) -> float:
    """Sum over players of the best-response gain against the tabular policy (OpenSpiel's);
    `policy` is a policy table or what `solve_cfr` returned (its average policy)."""
    table = policy.policy if isinstance(policy, CFRResult) else policy
    return float(pyspiel.nash_conv(game, to_pyspiel_policy(table)))


def deviation_values(game: pyspiel.Game, row: Strategy, col: Strategy) -> list[float]:
    """Per player i: i's value when i plays `row` and every other player plays `col`."""
    n = game.num_players()
    out = []
    for i in range(n):
        joint = [row if p == i else col for p in range(n)]
        out.append(float(expected_returns(game, joint)[i]))
    return out


def cfr_gain(game: pyspiel.Game, cfr: Strategy, any_: Strategy) -> list[float]:
    """Per player: V_i(i plays CFR, others `any`) - V_i(all play `any`) (the paper's CFR gain)."""
    base = expected_returns(game, [any_] * game.num_players())
    switched = deviation_values(game, cfr, any_)
    return [float(s - b) for s, b in zip(switched, base, strict=True)]


def head_to_head(
    game: pyspiel.Game, strategies: Mapping[str, Strategy]
) -> dict[str, dict[str, float]]:
    """table[row][col]: mean over players i of V_i(i plays row, others play col)."""
    return {
        r: {c: float(np.mean(deviation_values(game, rs, cs))) for c, cs in strategies.items()}
        for r, rs in strategies.items()
    }


def normalized(value: float, span: float, players: int = 1) -> float:
    """The one definition of summary.json's and Table 1's normalised numbers: `value` /
    (players x span), `span` being the config's payoff range (`PayoffSpec.span`, the
    summary's `payoff_bounds`), never one instance's own bounds (a domain may narrow those per
    deal), so instances and domains share one unit. NashConv, a sum over players, passes
    `players` (then in [0, 1]); a CFR gain, a mean over players, does not (then in [-1, 1])."""
    return value / (players * span)


class MeanCI(BaseModel):
    """Mean over instances with a two-sided 95% Student-t interval (null when n < 2)."""

    mean: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int

    @property
    def side(self) -> int | None:
        return side_of_zero(self.ci_low, self.ci_high)


class Metric(MeanCI):
    """One measure over instances: its value per instance (in the run's instance order), the
    mean and the 95% Student-t interval (`Metric.of`)."""

    per_instance: list[float]

    @classmethod
    def of(cls, values: Sequence[float]) -> Metric:
        return cls(per_instance=list(values), **mean_ci(values).model_dump())


def side_of_zero(low: float | None, high: float | None) -> int | None:
    """Where an interval lies: 1 above 0, -1 below 0, 0 holding it, None when there is none
    (the one test every study's reading of an interval makes)."""
    if low is None or high is None:
        return None
    return 1 if low > 0 else -1 if high < 0 else 0


def t_interval(
    values: Any, axis: int = 0, confidence: float = 0.95
) -> tuple[Any, Any] | None:
    """Two-sided Student-t interval of the mean along `axis`, element-wise for arrays (the
    bounds equal the mean where the values do not vary); None for fewer than two values."""
    from scipy import stats

    vals = np.asarray(values, dtype=float)
    n = vals.shape[axis]
    if n < 2:
        return None
    mean, sem = vals.mean(axis=axis), stats.sem(vals, axis=axis)
    # stats.t.interval would do, but gives nan where sem is 0 (scale must be > 0).
    low = mean + stats.t.ppf((1.0 - confidence) / 2, n - 1) * sem
    high = mean + stats.t.ppf((1.0 + confidence) / 2, n - 1) * sem
    return low, high


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> MeanCI:
    vals = np.asarray(list(values), dtype=float)
    n = int(vals.size)
    if n == 0:
        return MeanCI(mean=math.nan, n=0)
    mean = float(vals.mean())
    interval = t_interval(vals, confidence=confidence)
    if interval is None:
        return MeanCI(mean=mean, n=n)
    return MeanCI(mean=mean, ci_low=float(interval[0]), ci_high=float(interval[1]), n=n)


#: Resamples of `bootstrap_interval` (the issue asks >= 2,000; 10,000 keeps the bounds'
#: Monte Carlo error under 1% of the interval's width on these sample sizes).
BOOTSTRAP_RESAMPLES = 10_000


def bootstrap_interval(values: Sequence[float], confidence: float = 0.95,
                       resamples: int = BOOTSTRAP_RESAMPLES,
                       seed: int = 0) -> tuple[float, float] | None:
    """Two-sided bootstrap interval of the mean (scipy's BCa, resampling instances; on paired
    differences, a paired bootstrap), seeded so a page redraws the same bounds; None for
    fewer than two values. Values that do not vary give their value as both bounds."""
    from scipy import stats

    vals = np.asarray(list(values), dtype=float)
    if vals.size < 2:
        return None
    if np.ptp(vals) == 0.0:
        return float(vals[0]), float(vals[0])
    for method in ("BCa", "percentile"):  # BCa is undefined when a jackknife is flat
        result = stats.bootstrap((vals,), np.mean, n_resamples=resamples,
                                 confidence_level=confidence, method=method,
                                 rng=np.random.default_rng(seed))
        low, high = result.confidence_interval
        if np.isfinite(low) and np.isfinite(high):
            return float(low), float(high)
    return None


def instances_for_power(values: Sequence[float], power: float = 0.8,
                        confidence: float = 0.95) -> int | None:
    """How many instances a two-sided t-test at `confidence` needs to exclude 0 with
    probability `power`, if the mean and spread stay as measured in `values` (the normal
    approximation, then one t-correction step); None where the mean is 0 or nothing varies."""
    from scipy import stats

    vals = np.asarray(list(values), dtype=float)
    if vals.size < 2:
        return None
    mean, sd = float(vals.mean()), float(vals.std(ddof=1))
    if mean == 0.0 or sd == 0.0:
        return None
    z = stats.norm.ppf((1 + confidence) / 2) + stats.norm.ppf(power)
    n = max(2, math.ceil((z * sd / abs(mean)) ** 2))
    t = stats.t.ppf((1 + confidence) / 2, n - 1) + stats.t.ppf(power, n - 1)
    return max(2, math.ceil((t * sd / abs(mean)) ** 2))


class Proportion(BaseModel):
    """`correct` of `n` (right readings, games won) as the share `accuracy`, with a two-sided
    95% Wilson interval: the one proportion type (`wilson` makes it)."""

    correct: int
    n: int
    accuracy: float
    ci_low: float
    ci_high: float


class Spelling:
    """A file's own names for a model's fields, as `Annotated[Proportion, Spelling(...)]`: read
    and written under those names, so files written when win rates (or confusion matrices)
    were types of their own keep their bytes, while code has one type."""

    def __init__(self, **names: str) -> None:
        self.names = names

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler
                                     ) -> CoreSchema:
        out, back = self.names, {v: k for k, v in self.names.items()}
        return core_schema.no_info_before_validator_function(
            lambda d: {back.get(k, k): v for k, v in d.items()} if isinstance(d, dict) else d,
            handler(source), serialization=core_schema.plain_serializer_function_ser_schema(
                lambda p: {out.get(k, k): v for k, v in dict(p).items()}))


#: A verdict game's win rate, a Werewolf side's, and a reward path's sign flips, as their
#: reports spell them.
WinRate = Annotated[Proportion, Spelling(correct="wins", n="games", accuracy="rate")]
TeamRate = Annotated[Proportion, Spelling(correct="wins", n="games", accuracy="rate",
                                          ci_low="low", ci_high="high")]
SignFlips = Annotated[Proportion, Spelling(correct="flipped", accuracy="rate")]


def wilson(correct: int, n: int) -> Proportion:
    """The share `correct / n` with its 95% Wilson score interval (scipy's binomtest); 0 of 0
    is all zeros."""
    from scipy import stats

    if n == 0:
        return Proportion(correct=0, n=0, accuracy=0.0, ci_low=0.0, ci_high=0.0)
    ci = stats.binomtest(correct, n).proportion_ci(confidence_level=0.95, method="wilson")
    return Proportion(
        correct=correct, n=n, accuracy=correct / n, ci_low=float(ci.low), ci_high=float(ci.high)
    )


def mcnemar_exact(first_only: int, second_only: int) -> float:
    """Two-sided exact McNemar p-value for paired binary outcomes: a binomial test of the
    discordant pairs (`first_only` won only under the first condition, `second_only` only
    under the second) against 1/2. 1.0 when no pair is discordant."""
    from scipy import stats

    n = first_only + second_only
    return float(stats.binomtest(first_only, n, 0.5).pvalue) if n else 1.0
