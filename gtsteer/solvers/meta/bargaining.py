"""Nash bargaining solution meta-solver.

Definition (Nash 1950, n-player form): among the payoff vectors reachable by a joint
distribution sigma over strategy profiles (the convex hull of the profiles' payoffs), the one
maximising the product of gains over the disagreement point d, i.e. sum_i log(u_i(sigma) - d_i).
In PSRO the disagreement point is every player playing `any` (no steering).

Two players (every PSRO meta-game of the paper): exact. The product of gains is log-concave
on the payoff polygon, so its maximum lies on the polygon's boundary, on one edge of the
convex hull of the profiles' payoff pairs (scipy.spatial); on each edge it is a quadratic in
the mixing weight, maximised in closed form. The answer mixes the edge's two profiles.
More players: the objective is concave in sigma and the feasible set a simplex, so SLSQP
(scipy) climbs to the global optimum; its iterate is kept whenever it is feasible and better
than the start, also when SLSQP reports a precision stop ("positive directional derivative")
at the optimum, which it often does.
scipy is imported where it is used: it costs every CLI command ~0.4 s at startup.
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
    arr = check_stack(stack)
    n = arr.shape[0]
    d = np.asarray(disagreement, dtype=float)
    if d.shape != (n,) or not np.all(np.isfinite(d)):
        raise MetaGameError(f"disagreement: expected {n} finite payoffs, got {list(disagreement)}")
    shape = arr.shape[1:]
    u = arr.reshape(n, -1)  # u[i] @ x = player i's expected payoff
    scale = max(1.0, float(np.abs(arr).max()))

    start, min_gain = _max_min_gain(u, d)
    if min_gain <= _MIN_GAIN * scale:
        return MetaSolution.of(
            "nbs", start.reshape(shape),
            note="no joint strategy improves on the disagreement point for every player; "
            "the egalitarian (max-min gain) distribution is reported",
        )
    if n == 2:
        return MetaSolution.of("nbs", _two_player(u, d).reshape(shape))
    joint, note = _slsqp(u, d, start, min_gain)
    return MetaSolution.of("nbs", joint.reshape(shape), note=note)


def _max_min_gain(u: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, float]:
    """The distribution maximising the smallest gain t (linear program) and t."""
    from scipy.optimize import linprog

    n, size = u.shape
    c = np.zeros(size + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-u, np.ones((n, 1))])  # t - (u_i x - d_i) <= 0
    lp = linprog(
        c, A_ub=a_ub, b_ub=-d, A_eq=np.append(np.ones(size), 0.0)[None, :], b_eq=[1.0],
        bounds=[(0.0, None)] * size + [(None, None)], method="highs",
    )
    if lp.status != 0:
        raise MetaGameError(f"Nash bargaining start LP failed: {lp.message}")
    return np.clip(lp.x[:size], 0.0, None), float(lp.x[-1])


def hull_edges(points: np.ndarray) -> np.ndarray:
    """Index pairs (into `points`, shape (m, 2)) of the edges of their convex hull, each point
    a distinct payoff pair. Collinear points (Qhull refuses them) make one edge: the two
    extremes along the line."""
    from scipy.spatial import ConvexHull, QhullError

    if len(points) == 1:
        return np.array([[0, 0]])
    if len(points) >= 3:
        try:
            return np.sort(ConvexHull(points).simplices, axis=1)
        except QhullError:
            pass  # collinear
    direction = points[np.argmax(np.linalg.norm(points - points[0], axis=1))] - points[0]
    along = points @ direction
    return np.array([[int(np.argmin(along)), int(np.argmax(along))]])


def best_on_segments(a: np.ndarray, b: np.ndarray, d: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per segment k from a[k] to b[k] (payoff pairs): the weight t in [0, 1] of b that
    maximises (p0 - d0)(p1 - d1) at p = (1 - t) a + t b with both gains positive, and that
    product (-inf where no point of the segment has both gains positive).

    With g = a - d and D = b - a the product is g0 g1 + t (g0 D1 + g1 D0) + t^2 D0 D1. Where
    both gains are positive its logarithm is concave, so the maximum is the stationary point
    clipped to [0, 1] (it lies midway between the two gains' roots), or an end point."""
    g, delta = a - d, b - a
    curvature = delta[:, 0] * delta[:, 1]
    slope = g[:, 0] * delta[:, 1] + g[:, 1] * delta[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        stationary = np.where(curvature < 0, -slope / (2 * curvature), 0.0)
    tries = np.stack([np.zeros(len(a)), np.ones(len(a)), np.clip(stationary, 0.0, 1.0)], axis=1)
    gains = g[:, None, :] + tries[:, :, None] * delta[:, None, :]
    value = np.where((gains > 0).all(axis=2), gains[..., 0] * gains[..., 1], -np.inf)
    pick = np.argmax(value, axis=1)
    rows = np.arange(len(a))
    return tries[rows, pick], value[rows, pick]


def _two_player(u: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The exact 2-player NBS (module docstring): the best point over the hull's edges, as a
    joint distribution on the edge's two profiles (the first profile of each payoff pair)."""
    points, first = np.unique(u.T, axis=0, return_index=True)
    edges = hull_edges(points)
    t, value = best_on_segments(points[edges[:, 0]], points[edges[:, 1]], d)
    k = int(np.argmax(value))
    if not np.isfinite(value[k]):  # unreachable: the caller checked a positive max-min gain
        raise MetaGameError("Nash bargaining: no hull point improves for both players")
    joint = np.zeros(u.shape[1])
    joint[first[edges[k, 0]]] += 1.0 - t[k]
    joint[first[edges[k, 1]]] += t[k]
    return joint


def _slsqp(u: np.ndarray, d: np.ndarray, start: np.ndarray, min_gain: float
           ) -> tuple[np.ndarray, str]:
    """Maximise sum log gains from the max-min point (concave: the optimum is global)."""
    from scipy.optimize import minimize

    size = u.shape[1]

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
    if x.sum() <= 0 or abs(x.sum() - 1.0) > 1e-6:
        return start, f"SLSQP left the simplex ({result.message}); max-min point kept"
    x = x / x.sum()
    if np.min(u @ x - d) <= 0 or objective(x) > objective(start):
        return start, f"SLSQP found nothing better ({result.message}); max-min point kept"
    # a precision stop at the optimum is the common case of a non-success status
    return x, "" if result.success else f"SLSQP stopped early ({result.message}); best iterate"
