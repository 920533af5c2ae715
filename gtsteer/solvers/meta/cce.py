"""Coarse correlated equilibrium meta-solvers: maximum welfare (ties: maximum entropy), and
maximum entropy (JPSRO's MECCE, Marris et al. 2021, arXiv 2106.09435).

Definition (Moulin & Vial 1978; Hannan): a joint distribution sigma over strategy profiles is a
CCE when no player gains by committing in advance to a fixed strategy d instead of following
sigma: for every player i and strategy d, E_sigma[u_i(d, a_-i)] <= E_sigma[u_i(a)]. These are
linear constraints, so the welfare-maximising CCE is a linear program (scipy's HiGHS). Several
distributions often reach the maximum welfare (battle of the sexes: any mix of the two
coordinated outcomes); the entropy tie-break picks the unique least committal one among them.
The maximum-entropy CCE ignores welfare: the least committal CCE of all, JPSRO's convention; it
is less cooperative than the max-welfare one, which tends toward the bargaining solution.
scipy.optimize is imported where it is used: it costs every CLI command ~0.4 s at startup.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from gtsteer.solvers.meta.common import MetaGameError, MetaSolution, check_stack

TieBreak = Literal["entropy", "none"]


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
    from scipy.optimize import linprog

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


def max_entropy_cce(stack: np.ndarray) -> MetaSolution:
    """The CCE of maximum entropy (unique: entropy is strictly concave on a polytope)."""
    from scipy.optimize import linprog

    arr = check_stack(stack)
    shape = arr.shape[1:]
    a_ub = cce_constraints(arr)
    size = a_ub.shape[1]
    lp = linprog(np.zeros(size), A_ub=a_ub, b_ub=np.zeros(len(a_ub)), A_eq=np.ones((1, size)),
                 b_eq=[1.0], bounds=[(0.0, None)] * size, method="highs")
    if lp.status != 0:
        raise MetaGameError(f"CCE linear program failed: {lp.message}")
    scale = max(1.0, float(np.abs(arr).max()))
    joint, note = _max_entropy(a_ub, None, 0.0, np.clip(lp.x, 0.0, None), scale=scale)
    return MetaSolution.of("mecce", joint.reshape(shape), note=note)


def _max_entropy(
    a_ub: np.ndarray, welfare: np.ndarray | None, target: float, start: np.ndarray,
    scale: float | None = None,
) -> tuple[np.ndarray, str]:
    """Maximum-entropy CCE among those whose welfare is (within a hair of) `target` (among all
    CCEs when `welfare` is None; `scale` is then the payoffs' magnitude).

    Entropy pushes every probability off zero, but most profiles have zero mass in every
    max-welfare CCE, and a solver started at such a boundary crawls. So first one small LP
    per profile finds which profiles can carry mass at all (the optimal face's support) and a
    point inside the face (the average of those LP solutions); the dual method
    (`_dual_max_entropy`) then maximises entropy over that support. On the max-welfare face
    the welfare bound is one more row of the dual: w @ x >= target is (target - w) @ x <= 0
    on the simplex. (SLSQP on the primal, used before, stopped short in 20 of 150 random 2-3
    player games and on 10 x 10 games, taking seconds there: review 66ff82a L1.) The face
    centre is kept, with a note, if the dual's answer is not within tolerance of the face."""
    from scipy.optimize import linprog

    if welfare is not None:
        scale = max(1.0, float(np.abs(welfare).max()))
    tol = 1e-9 * (scale or 1.0)
    size = a_ub.shape[1]
    if welfare is None:
        face_ub, face_b = a_ub, np.zeros(len(a_ub))
    else:
        face_ub = np.vstack([a_ub, -welfare[None, :]])
        face_b = np.append(np.zeros(len(a_ub)), -(target - tol))
    points = []
    for j in range(size):
        c = np.zeros(size)
        c[j] = -1.0
        lp = linprog(c, A_ub=face_ub, b_ub=face_b, A_eq=np.ones((1, size)), b_eq=[1.0],
                     bounds=[(0.0, None)] * size, method="highs")
        if lp.status == 0 and lp.x[j] > 1e-9:
            points.append(np.clip(lp.x, 0.0, None))
    if not points:
        return start, "max-entropy tie-break found no support; LP vertex kept"
    interior = np.mean(points, axis=0)
    support = np.flatnonzero(interior > 1e-12)
    if len(support) == 1:
        return interior, ""
    rows = a_ub[:, support]
    if welfare is not None:
        rows = np.vstack([rows, target - welfare[support]])
    x = np.zeros(size)
    x[support] = _dual_max_entropy(rows, 10 * tol)
    feasible = (a_ub @ x).max(initial=0.0) <= 1e3 * tol and (
        welfare is None or welfare @ x >= target - 1e3 * tol)
    if feasible:
        return x, ""
    # the interior point is itself a (max-welfare) CCE, only not the most spread out
    return interior, "max-entropy step did not reach the face; face centre kept"


def _dual_max_entropy(g: np.ndarray, slack: float) -> np.ndarray:
    """argmax entropy(x) subject to g @ x <= slack, sum(x) = 1, through the dual: x is the
    Gibbs distribution x_j ~ exp(-(g^T lam)_j), and lam >= 0 minimises the convex
    log-partition log sum_j exp(-(g^T lam)_j) + slack sum(lam) (L-BFGS-B: one variable per
    constraint instead of one per profile, which is what makes SLSQP crawl on a 10 x 10)."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    scale = max(1.0, float(np.abs(g).max()))
    gs, hs = g / scale, slack / scale

    def dual(lam: np.ndarray) -> tuple[float, np.ndarray]:
        logits = -(gs.T @ lam)
        log_z = logsumexp(logits)
        x = np.exp(logits - log_z)
        return float(log_z + hs * lam.sum()), hs - gs @ x

    result = minimize(dual, np.zeros(len(g)), jac=True, method="L-BFGS-B",
                      bounds=[(0.0, None)] * len(g),
                      options={"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-12})
    logits = -(gs.T @ result.x)
    x = np.exp(logits - logsumexp(logits))
    return x / x.sum()
