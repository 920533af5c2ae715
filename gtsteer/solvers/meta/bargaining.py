"""Nash bargaining solution meta-solver.

Definition (Nash 1950, n-player form): among the payoff vectors reachable by a joint
distribution sigma over strategy profiles (the convex hull of the profiles' payoffs), the one
maximising the product of gains over the disagreement point d, i.e. sum_i log(u_i(sigma) - d_i).
The objective is concave in sigma and the feasible set a simplex, so a local optimum is global
(scipy SLSQP). In PSRO the disagreement point is every player playing `any` (no steering).
scipy.optimize is imported where it is used: it costs every CLI command ~0.4 s at startup.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gtsteer.solvers.meta.common import MetaGameError, MetaSolution, check_stack

#: Gains below this (relative to the payoff range) count as "no improvement".
_MIN_GAIN = 1e-9


def nash_bargaining(stack: np.ndarray, disagreement: Sequence[float]) -> MetaSolution:
    """The joint distribution maximising sum_i log(u_i - d_i); see the module docstring.

    When no distribution gives every player a strictly positive gain, the product is zero
    everywhere; the answer is then the distribution maximising the smallest gain (the
    egalitarian point, which is at least d for everyone when d is reachable), with a note."""
    from scipy.optimize import linprog, minimize

    arr = check_stack(stack)
    n = arr.shape[0]
    d = np.asarray(disagreement, dtype=float)
    if d.shape != (n,) or not np.all(np.isfinite(d)):
        raise MetaGameError(f"disagreement: expected {n} finite payoffs, got {list(disagreement)}")
    shape = arr.shape[1:]
    u = arr.reshape(n, -1)  # u[i] @ x = player i's expected payoff
    size = u.shape[1]
    scale = max(1.0, float(np.abs(arr).max()))

    # 1. maximise the smallest gain t: an interior start for step 2, or the degenerate answer.
    c = np.zeros(size + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-u, np.ones((n, 1))])  # t - (u_i x - d_i) <= 0
    lp = linprog(
        c, A_ub=a_ub, b_ub=-d, A_eq=np.append(np.ones(size), 0.0)[None, :], b_eq=[1.0],
        bounds=[(0.0, None)] * size + [(None, None)], method="highs",
    )
    if lp.status != 0:
        raise MetaGameError(f"Nash bargaining start LP failed: {lp.message}")
    start, min_gain = np.clip(lp.x[:size], 0.0, None), float(lp.x[-1])
    if min_gain <= _MIN_GAIN * scale:
        return MetaSolution.of(
            "nbs", start.reshape(shape),
            note="no joint strategy improves on the disagreement point for every player; "
            "the egalitarian (max-min gain) distribution is reported",
        )

    # 2. maximise sum log gains from there (concave: SLSQP converges to the global optimum).
    def objective(x: np.ndarray) -> float:
        gains = np.maximum(u @ x - d, 1e-300)
        return -float(np.sum(np.log(gains)))

    def grad(x: np.ndarray) -> np.ndarray:
        gains = np.maximum(u @ x - d, 1e-300)
        return -(u / gains[:, None]).sum(axis=0)

    floor = 1e-3 * min_gain  # keep iterates inside the domain of log
    result = minimize(
        objective, start, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * size,
        constraints=[
            {"type": "eq", "fun": lambda x: np.sum(x) - 1.0, "jac": lambda x: np.ones(size)},
            {"type": "ineq", "fun": lambda x: u @ x - d - floor, "jac": lambda x: u},
        ],
        options={"maxiter": 1000, "ftol": 1e-14},
    )
    x = np.clip(result.x, 0.0, None)
    if not result.success or x.sum() <= 0 or objective(x / x.sum()) > objective(start):
        return MetaSolution.of("nbs", start.reshape(shape),
                               note=f"SLSQP did not converge ({result.message}); max-min kept")
    return MetaSolution.of("nbs", (x / x.sum()).reshape(shape))
