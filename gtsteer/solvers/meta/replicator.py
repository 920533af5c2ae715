"""Replicator dynamics meta-solver.

Definition: the (projected) replicator dynamics of Taylor & Jonker (1978) in the n-player form of
Lanctot et al. (2017, arXiv 1711.00832): each player's mixture grows each strategy at the rate
of its payoff advantage over the mixture's average, projected onto the simplex with a small
floor; the answer is the time-average of the trajectory. OpenSpiel's implementation is used
as is; only the per-player tensors and the reporting are ours.
"""

from __future__ import annotations

import numpy as np
from open_spiel.python.algorithms.projected_replicator_dynamics import (
    projected_replicator_dynamics,
)

from gtsteer.solvers.meta.common import MetaSolution, check_stack, product

#: 5k steps of size 0.04 reach twice the time horizon of OpenSpiel's default (1e5 x 1e-3)
#: in a twentieth of the time (payoffs are scaled to [0, 1] first, so the step stays small).
DEFAULT_ITERATIONS = 5_000
DEFAULT_DT = 4e-2
DEFAULT_GAMMA = 1e-6


def replicator_dynamics(
    stack: np.ndarray,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    dt: float = DEFAULT_DT,
    gamma: float = DEFAULT_GAMMA,
) -> MetaSolution:
    """Projected replicator dynamics from the uniform mixture, averaged over the second half of
    the trajectory (the early transient would bias the average; deterministic).

    Payoffs are rescaled to [0, 1] first (one affine map for all players keeps the dynamics'
    fixed points and makes `dt` mean the same whatever the domain's payoff bounds)."""
    arr = check_stack(stack)
    if iterations < 1:
        raise ValueError(f"iterations: must be >= 1, got {iterations}")
    span = float(arr.max() - arr.min())
    scaled = (arr - arr.min()) / span if span > 0 else np.zeros_like(arr)
    strategies = projected_replicator_dynamics(
        [scaled[i] for i in range(arr.shape[0])],
        prd_iterations=iterations,
        prd_dt=dt,
        prd_gamma=gamma,
        average_over_last_n_strategies=max(1, iterations // 2),
    )
    return MetaSolution.of("rd", product([np.asarray(s) for s in strategies]), product=True)
