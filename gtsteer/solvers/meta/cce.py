"""Coarse correlated equilibrium meta-solver: maximum welfare, maximum entropy among ties.

Definition (Moulin & Vial 1978; Hannan): a joint distribution sigma over strategy profiles is a
CCE when no player gains by committing in advance to a fixed strategy d instead of following
sigma: for every player i and strategy d, E_sigma[u_i(d, a_-i)] <= E_sigma[u_i(a)]. These are
linear constraints, so the welfare-maximising CCE is a linear program (scipy's HiGHS). Several
distributions often reach the maximum welfare (battle of the sexes: any mix of the two
coordinated outcomes); the entropy tie-break picks the unique least committal one among them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.optimize import linprog, minimize

from gtsteer.solvers.meta.common import MetaGameError, MetaSolution, check_stack

TieBreak = Literal["entropy", "none"]
_FLOOR = 1e-12


def cce_constraints(stack: np.ndarray) -> np.ndarray:
    """Rows A with A @ sigma.ravel() <= 0 exactly when sigma is a CCE (one row per (i, d))."""
    arr = check_stack(stack)
    rows = []
    for i in range(arr.shape[0]):
        u = arr[i]
        for d in range(u.shape[i]):
            deviate = np.broadcast_to(np.take(u, [d], axis=i), u.shape)
            rows.append((deviate - u).ravel())
    return np.array(rows)


def max_welfare_cce(stack: np.ndarray, *, tie_break: TieBreak = "entropy") -> MetaSolution:
    """The CCE of maximum total payoff (ties: maximum entropy, unless tie_break="none")."""
    arr = check_stack(stack)
    shape = arr.shape[1:]
    welfare = arr.sum(axis=0).ravel()
    a_ub = cce_constraints(arr)
    size = welfare.size
    lp = linprog(
        -welfare, A_ub=a_ub, b_ub=np.zeros(len(a_ub)), A_eq=np.ones((1, size)), b_eq=[1.0],
        bounds=[(0.0, None)] * size, method="highs",
    )
    if lp.status != 0:  # a CCE always exists (any Nash equilibrium is one): a solver failure
        raise MetaGameError(f"CCE linear program failed: {lp.message}")
    best = np.clip(lp.x, 0.0, None)
    if tie_break == "none":
        return MetaSolution.of("cce", best.reshape(shape))
    if tie_break != "entropy":
        raise ValueError(f"tie_break: expected 'entropy' or 'none', got {tie_break!r}")
    joint, note = _max_entropy(a_ub, welfare, float(welfare @ best), best)
    return MetaSolution.of("cce", joint.reshape(shape), note=note)


def _max_entropy(
    a_ub: np.ndarray, welfare: np.ndarray, target: float, start: np.ndarray
) -> tuple[np.ndarray, str]:
    """Maximum-entropy CCE whose welfare is within a hair of `target` (a smooth convex program,
    so SLSQP; the LP vertex is kept if it fails)."""
    scale = max(1.0, float(np.abs(welfare).max()))
    tol = 1e-7 * scale
    size = welfare.size
    x0 = 0.9 * start + 0.1 / size  # interior start: the entropy gradient is finite there

    def neg_entropy(x: np.ndarray) -> float:
        x = np.maximum(x, _FLOOR)
        return float(np.sum(x * np.log(x)))

    def grad(x: np.ndarray) -> np.ndarray:
        return np.log(np.maximum(x, _FLOOR)) + 1.0

    result = minimize(
        neg_entropy, x0, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * size,
        constraints=[
            {"type": "eq", "fun": lambda x: np.sum(x) - 1.0, "jac": lambda x: np.ones(size)},
            {"type": "ineq", "fun": lambda x: -(a_ub @ x) + tol, "jac": lambda x: -a_ub},
            {"type": "ineq", "fun": lambda x: welfare @ x - (target - tol),
             "jac": lambda x: welfare},
        ],
        options={"maxiter": 500, "ftol": 1e-12},
    )
    x = np.clip(result.x, 0.0, None)
    x = x / x.sum() if x.sum() > 0 else start
    feasible = (a_ub @ x).max(initial=0.0) <= 10 * tol and welfare @ x >= target - 10 * tol
    if not (result.success and feasible):
        return start, f"max-entropy tie-break failed ({result.message}); LP vertex kept"
    return x, ""
