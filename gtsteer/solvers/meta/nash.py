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

Every answer is checked: no player gains more than `CHECK_TOLERANCE` x the payoff span by
deviating. Replicator dynamics is no substitute in general-sum games: its time average need
not approach an equilibrium at all. scipy and nashpy are imported where they are used.
"""

from __future__ import annotations

import numpy as np

from gtsteer.solvers.meta.common import MetaGameError, MetaSolution, check_stack, product, regrets

#: An answer whose restricted NashConv exceeds this (relative to the payoff span) is refused.
CHECK_TOLERANCE = 1e-6


def two_player_nash(stack: np.ndarray) -> MetaSolution:
    """An exact Nash equilibrium of a 2-player stack (shape (2, n0, n1)); see the module doc."""
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
        row, col = _max_welfare_equilibrium(a, b)
        note = "maximum-welfare equilibrium (MILP)"
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


def _max_welfare_equilibrium(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variables [x (m), y (n), u, v, r (m), s (n), px (m), py (n)]: the mixtures, the values,
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
                  integrality=integrality, bounds=Bounds(lower, upper))
    if result.status != 0 or result.x is None:
        raise MetaGameError(f"exact Nash: the mixed-integer program failed: {result.message}")
    sol = result.x
    return _polish(a, b, sol[px] < 0.5, sol[py] < 0.5, sol[x], sol[y])


def _polish(a: np.ndarray, b: np.ndarray, row_support: np.ndarray, col_support: np.ndarray,
            row: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The MILP's supports, re-solved as two linear programs (each player's mixture makes the
    other indifferent on its support and no better off elsewhere); the MILP's own mixtures
    are kept where an LP fails."""
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

    return (mixture(b, row_support, col_support, row),
            mixture(a.T, col_support, row_support, col))


def _simplex(x: np.ndarray) -> np.ndarray:
    """Clip the solvers' round-off (-1e-17) and renormalise."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, None)
    return x / x.sum()
