"""The lab's significance tests: what Table 1 and the Werewolf styles study say about a cell
beyond its interval (Holm over a table's cells, the sign test where a cell is skewed, the
minimum detectable effect, a bootstrap bound's Monte Carlo error). No product command reports
them; the intervals themselves are the product's (`gtsteer.solvers.metrics`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from gtsteer.solvers.metrics import BOOTSTRAP_RESAMPLES, bootstrap_interval


def above_chance(k: int, n: int, chance: float) -> float:
    """One-sided exact binomial p of k hits in n against `chance` (1.0 for n = 0)."""
    from scipy import stats

    return float(stats.binomtest(k, n, chance, alternative="greater").pvalue) if n else 1.0


def t_test_p(values: Sequence[float]) -> float | None:
    """Two-sided one-sample Student-t p of mean 0 (on paired differences, the paired t-test);
    None for fewer than two values, 1.0 where nothing varies around a mean of 0."""
    from scipy import stats

    vals = np.asarray(list(values), dtype=float)
    if vals.size < 2:
        return None
    if np.ptp(vals) == 0.0:
        return 1.0 if vals[0] == 0.0 else 0.0
    return float(stats.ttest_1samp(vals, 0.0).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the given order (family-wise error control for
    m tests; scipy.stats has none): sort ascending, multiply the i-th smallest (0-based) by
    m - i, carry the running maximum so adjusted p never decreases, cap at 1."""
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: pvalues[j])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


class SignTest(BaseModel):
    """Counts of positive, negative and tied values, and the exact two-sided sign test of
    P(positive) = 1/2 over the untied ones (1.0 when every value ties)."""

    positive: int
    negative: int
    ties: int
    p: float


def sign_test(values: Sequence[float], tie: float = 0.0) -> SignTest:
    """The exact sign test (scipy's binomtest) of values whose |value| <= `tie` count as ties:
    robust to the skew and the point mass at 0 that make a t interval on the mean unreliable."""
    from scipy import stats

    vals = np.asarray(list(values), dtype=float)
    pos, neg = int((vals > tie).sum()), int((vals < -tie).sum())
    p = float(stats.binomtest(pos, pos + neg, 0.5).pvalue) if pos + neg else 1.0
    return SignTest(positive=pos, negative=neg, ties=int(vals.size) - pos - neg, p=p)


def skewness(values: Sequence[float]) -> float | None:
    """Sample skewness (scipy's, biased); None for fewer than three values or none varying."""
    from scipy import stats

    vals = np.asarray(list(values), dtype=float)
    if vals.size < 3 or np.ptp(vals) == 0.0:
        return None
    return float(stats.skew(vals))


def min_detectable_effect(sd: float, n: int, power: float = 0.8,
                          confidence: float = 0.95) -> float | None:
    """The smallest true mean a two-sided one-sample (paired) t-test at 1 - `confidence`
    detects with probability `power` at this n and SD: (t_{1-a/2, n-1} + t_{power, n-1}) sd/√n
    (the usual closed form, e.g. Bloom 1995; within 1% of the noncentral-t power for n >= 10).
    A design quantity at the current n, unlike post-hoc power from an observed mean; None for
    n < 2."""
    from scipy import stats

    if n < 2:
        return None
    df = n - 1
    multiplier = stats.t.ppf((1 + confidence) / 2, df) + stats.t.ppf(power, df)
    return float(multiplier * sd / math.sqrt(n))


#: Resample seeds `bootstrap_bound_error` repeats the bootstrap with.
BOUND_REPLICATES = 10


def bootstrap_bound_error(values: Sequence[float], replicates: int = BOUND_REPLICATES,
                          resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float] | None:
    """The Monte Carlo error of each bound of `bootstrap_interval`: the SD of the bound over
    `replicates` other resample seeds (1..replicates; the printed interval uses seed 0). A
    bound within about 2 of these of 0 has a side of 0 that the seed decides (review
    science-0832c41, L1). None where the interval is."""
    bounds = [bootstrap_interval(values, resamples=resamples, seed=s)
              for s in range(1, replicates + 1)]
    kept = [b for b in bounds if b is not None]
    if len(kept) < 2:
        return None
    lows, highs = np.array(kept).T
    return float(lows.std(ddof=1)), float(highs.std(ddof=1))
