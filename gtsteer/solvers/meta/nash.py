"""Exact Nash equilibrium of a 2-player meta-game (a product distribution).

- Constant-sum (u0 + u1 the same at every profile): each player's maximin strategy from the
  minimax linear program (nashpy's `Game.linear_program`); the product of the two is an
  equilibrium, and every equilibrium has the same payoffs.
- General-sum: the maximum-welfare equilibrium as a mixed-integer program (Sandholm, Gilpin
  and Conitzer 2005, "Mixed-integer programming methods for finding Nash equilibria"; scipy's
  HiGHS `milp`): a binary per strategy says whether it may be played, a played strategy has
  zero regret. Then one linear program on the supports it found polishes the mixtures to LP
  precision. Exact in degenerate games too (ties between payoffs are common in meta-games),
  where nashpy's Lemke-Howson and support enumeration miss or mis-state equilibria: on 300
  random 2..7 x 2..7 games (a third with integer payoffs) its lexicographic Lemke-Howson
  returned no checked equilibrium from any label for 20 of the first 157, and did not finish
  the 158th in minutes.

The MILP stops at `MIP_REL_GAP` (HiGHS's default, 1e-4, let it return an equilibrium 5e-6 below
the best of a near-tied game) and after `time_limit` seconds (default `TIME_LIMIT_S`; a 25 x 25
random game can take minutes). At the time limit its best solution so far is kept (every
feasible point of the MILP is an equilibrium), with a note giving HiGHS's bound on the maximum
welfare; if it has none yet, the pure-strategy equilibrium of maximum welfare, with a note; if
there is none, MetaGameError. So "maximum welfare" holds to a relative gap of `MIP_REL_GAP` on
the [0, 1]-normalised payoffs, within HiGHS's feasibility tolerances (1e-6 on the binaries and
regrets), unless the note says the time limit was reached.

Every answer is checked: no player gains more than `CHECK_TOLERANCE` x the payoff span by
deviating. Replicator dynamics is no substitute in general-sum games: its time average need
not approach an equilibrium at all. scipy and nashpy are imported where they are used.
"""

from __future__ import annotations

import numpy as np

from gtsteer.solvers.meta.common import MetaGameError, MetaSolution, check_stack, product, regrets

#: An answer whose restricted NashConv exceeds this (relative to the payoff span) is refused.
CHECK_TOLERANCE = 1e-6
#: The MILP's relative optimality gap (on welfare in [0, 2] after the affine map).
MIP_REL_GAP = 1e-9
#: Seconds the MILP may run before its best equilibrium so far is taken (see the module doc).
TIME_LIMIT_S = 30.0
#: Probability below which a MILP mixture's entry counts as not played (HiGHS's primal
#: feasibility tolerance is 1e-7).
PLAYED = 1e-7


def two_player_nash(stack: np.ndarray, *, time_limit: float = TIME_LIMIT_S) -> MetaSolution:
    """An exact Nash equilibrium of a 2-player stack (shape (2, n0, n1)); see the module doc
    (`time_limit`: seconds for the general-sum MILP)."""
    arr = check_stack(stack)
    if arr.shape[0] != 2:
        raise MetaGameError(f"exact Nash: only for 2-player meta-games, got {arr.shape[0]}")
    span = float(arr.max() - arr.min())
    if span == 0.0:
        size = arr[0].size
        return MetaSolution.of("nash", np.full(arr.shape[1:], 1.0 / size), product=True)
    a, b = (arr - arr.min()) / span  # one affine map: the same equilibria, payoffs in [0, 1]
    total = arr[0] + arr[1]
    if float(total.max() - total.min()) <= 1e-12 * span:
        row, col = _minimax(a)
        note = "constant-sum: minimax LP"
    else:
        row, col, bound = _max_welfare_equilibrium(a, b, time_limit)
        if bound is None:
            note = "maximum-welfare equilibrium (MILP)"
        elif np.isnan(bound):
            note = (f"MILP time limit ({time_limit:g} s) before any solution: the "
                    f"maximum-welfare pure equilibrium")
        else:  # HiGHS's bound on the normalised welfare, in the stack's units
            note = (f"MILP time limit ({time_limit:g} s): its best equilibrium so far; the "
                    f"maximum welfare is at most {bound * span + 2 * float(arr.min()):.6g}")
    joint = product([row, col])
    gap = float(regrets(arr, joint).sum())
    if gap > CHECK_TOLERANCE * span:
        raise MetaGameError(f"exact Nash: the answer has NashConv {gap:.3g} (payoff span "
                            f"{span:.3g}); the solver failed")
    return MetaSolution.of("nash", joint, note=note, product=True)


def _minimax(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import nashpy

    row, col = nashpy.Game(a, -a).linear_program()
    return _simplex(row), _simplex(col)


def _max_welfare_equilibrium(a: np.ndarray, b: np.ndarray, time_limit: float
                             ) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The mixtures and, when `time_limit` cut the MILP short, HiGHS's upper bound on the
    normalised welfare (NaN: no MILP solution, the best pure equilibrium instead).

    Variables [x (m), y (n), u, v, r (m), s (n), px (m), py (n)]: the mixtures, the values,
    the regrets and binaries "strategy not played". Regrets are at most 1 (payoffs in [0, 1]).
    Maximise u + v, the welfare (at an equilibrium each player's value is its payoff)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    m, n = a.shape
    size = 3 * (m + n) + 2
    x, y = np.arange(m), m + np.arange(n)
    u, v = m + n, m + n + 1
    r, s = m + n + 2 + np.arange(m), 2 * m + n + 2 + np.arange(n)
    px, py = 2 * (m + n) + 2 + np.arange(m), 2 * (m + n) + 2 + m + np.arange(n)
    rows: list[np.ndarray] = []
    low: list[float] = []
    high: list[float] = []

    def constrain(row: np.ndarray, lo: float, hi: float) -> None:
        """One row of the linear constraints lo <= row @ z <= hi."""
        rows.append(row)
        low.append(lo)
        high.append(hi)

    for idx in (x, y):
        row = np.zeros(size)
        row[idx] = 1.0
        constrain(row, 1.0, 1.0)
    for i in range(m):  # u - (A y)_i - r_i = 0
        row = np.zeros(size)
        row[u], row[y], row[r[i]] = 1.0, -a[i], -1.0
        constrain(row, 0.0, 0.0)
    for j in range(n):  # v - (B^T x)_j - s_j = 0
        row = np.zeros(size)
        row[v], row[x], row[s[j]] = 1.0, -b[:, j], -1.0
        constrain(row, 0.0, 0.0)
    for prob, regret, off in ((x, r, px), (y, s, py)):
        for k in range(len(prob)):
            row = np.zeros(size)  # played only if allowed: prob + off <= 1
            row[prob[k]], row[off[k]] = 1.0, 1.0
            constrain(row, -np.inf, 1.0)
            row = np.zeros(size)  # regret only if not played: regret - off <= 0
            row[regret[k]], row[off[k]] = 1.0, -1.0
            constrain(row, -np.inf, 0.0)
    lower = np.zeros(size)
    upper = np.ones(size)
    lower[[u, v]], upper[[u, v]] = -np.inf, np.inf
    integrality = np.zeros(size)
    integrality[np.concatenate([px, py])] = 1
    objective = np.zeros(size)
    objective[[u, v]] = -1.0
    result = milp(objective, constraints=LinearConstraint(np.array(rows), low, high),
                  integrality=integrality, bounds=Bounds(lower, upper),
                  options={"time_limit": time_limit, "mip_rel_gap": MIP_REL_GAP})
    if result.status == 1 and result.x is None:  # out of time before any equilibrium
        pure = _best_pure_equilibrium(a, b)
        if pure is None:
            raise MetaGameError(f"exact Nash: the MILP found no equilibrium within its "
                                f"{time_limit:g} s time limit and the game has no pure one; "
                                f"raise time_limit or drive PSRO with another meta-solver")
        return *pure, float("nan")
    if result.status not in (0, 1) or result.x is None:
        raise MetaGameError(f"exact Nash: the mixed-integer program failed: {result.message}")
    bound = -float(result.mip_dual_bound) if result.status == 1 else None
    sol = result.x
    return *_polish(a, b, sol[px] < 0.5, sol[py] < 0.5, sol[x], sol[y]), bound


def _best_pure_equilibrium(a: np.ndarray, b: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray] | None:
    """The pure-strategy equilibrium of maximum welfare (exact: no tolerance), or None."""
    stable = (a >= a.max(axis=0, keepdims=True)) & (b >= b.max(axis=1, keepdims=True))
    if not stable.any():
        return None
    welfare = np.where(stable, a + b, -np.inf)
    i, j = np.unravel_index(int(np.argmax(welfare)), a.shape)
    return np.eye(a.shape[0])[i], np.eye(a.shape[1])[j]


def _polish(a: np.ndarray, b: np.ndarray, row_allowed: np.ndarray, col_allowed: np.ndarray,
            row: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The MILP's supports, re-solved as two linear programs (each player's mixture makes the
    other indifferent on its support and no better off elsewhere); the MILP's own mixtures
    are kept where an LP fails.

    Two readings of "support" are tried, and the MILP's own mixtures kept as a third
    candidate: the strategies it plays (mass above `PLAYED`) and those its binaries allow.
    A strategy may be allowed but unplayed with a regret inside HiGHS's 1e-6 tolerance; asking
    for indifference there forces another, worse equilibrium (a near-tied 3 x 4 game lost
    0.14 of its normalised welfare that way). The candidate kept is the one of highest
    welfare among those with no regret at LP precision, then within `CHECK_TOLERANCE`."""
    from scipy.optimize import linprog

    def mixture(payoff: np.ndarray, own: np.ndarray, other: np.ndarray, fallback: np.ndarray
                ) -> np.ndarray:
        # find p >= 0 on `own` (sum 1) with payoff[:, k] . p = w for k in other, <= w elsewhere
        k = payoff.shape[0]
        c = np.zeros(k + 1)
        c[-1] = -1.0  # prefer the highest value for the mixer's opponent (welfare)
        eq = [np.append(payoff[:, j], -1.0) for j in np.flatnonzero(other)]
        ub = [np.append(payoff[:, j], -1.0) for j in np.flatnonzero(~other)]
        lp = linprog(c, A_ub=np.array(ub) if ub else None, b_ub=np.zeros(len(ub)) if ub else None,
                     A_eq=np.array([*eq, np.append(np.ones(k), 0.0)]),
                     b_eq=np.append(np.zeros(len(eq)), 1.0),
                     bounds=[(0.0, None) if own[i] else (0.0, 0.0) for i in range(k)]
                     + [(None, None)], method="highs")
        return _simplex(lp.x[:k]) if lp.status == 0 else _simplex(fallback)

    candidates = [(row, col)]
    for rows, cols in ((row > PLAYED, col > PLAYED), (row_allowed, col_allowed)):
        if rows.any() and cols.any():
            candidates.append((mixture(b, rows, cols, row), mixture(a.T, cols, rows, col)))
    candidates = [(_simplex(x), _simplex(y)) for x, y in candidates]

    def rank(xy: tuple[np.ndarray, np.ndarray]) -> tuple[int, float]:
        """Exact (LP precision) first, then within the check's tolerance, by welfare; the
        rest by regret (the caller's check then refuses them)."""
        x, y = xy
        regret = float((a @ y).max() - x @ a @ y + (x @ b).max() - x @ b @ y)
        tier = 0 if regret <= 1e-9 else 1 if regret <= CHECK_TOLERANCE else 2
        return tier, regret if tier == 2 else -float(x @ (a + b) @ y)

    return min(candidates, key=rank)


def _simplex(x: np.ndarray) -> np.ndarray:
    """Clip the solvers' round-off (-1e-17) and renormalise."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, None)
    return x / x.sum()
