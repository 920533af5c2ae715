"""What every meta-solver shares: the payoff-stack convention and joint-distribution algebra.

A meta-game with N players is a stack of per-player payoff tensors, shape
(N, n_0, ..., n_{N-1}): `stack[i][a_0, ..., a_{N-1}]` is player i's payoff when player j plays
its strategy a_j. General-sum and possibly asymmetric: nothing here symmetrises.
A solution is a joint distribution over strategy profiles (shape (n_0, ..., n_{N-1})); product
solutions (replicator dynamics) are joint distributions too, so every concept is reported and
evaluated the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class MetaGameError(ValueError):
    """A payoff stack or a distribution has the wrong shape or values."""


def check_stack(stack: np.ndarray) -> np.ndarray:
    """`stack` as float array, validated: shape (N, n_0, ..., n_{N-1}), finite."""
    arr = np.asarray(stack, dtype=float)
    if arr.ndim < 3 or arr.shape[0] != arr.ndim - 1:
        raise MetaGameError(
            f"payoff stack must have shape (N, n_0, ..., n_(N-1)) with N >= 2, got {arr.shape}"
        )
    if min(arr.shape[1:]) < 1:
        raise MetaGameError(f"every player needs at least one strategy, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise MetaGameError("payoff stack has NaN or infinite entries")
    return arr


def marginals(joint: np.ndarray) -> list[np.ndarray]:
    """Each player's marginal distribution of a joint distribution."""
    axes = range(joint.ndim)
    return [joint.sum(axis=tuple(a for a in axes if a != i)) for i in axes]


def product(dists: list[np.ndarray]) -> np.ndarray:
    """The joint distribution of independent players."""
    joint = np.asarray(dists[0], dtype=float)
    for d in dists[1:]:
        joint = np.multiply.outer(joint, np.asarray(d, dtype=float))
    return joint


def expected_payoffs(stack: np.ndarray, joint: np.ndarray) -> np.ndarray:
    """Each player's expected payoff under a joint distribution, shape (N,)."""
    return np.array([float(np.sum(stack[i] * joint)) for i in range(stack.shape[0])])


def deviation_payoffs(stack: np.ndarray, joint: np.ndarray, player: int) -> np.ndarray:
    """u_i(d, sigma_-i) for each strategy d of `player`: it ignores its recommendation and plays
    d while the others follow their joint marginal (the deviation a CCE guards against; for a
    product distribution this is the usual payoff against the others' mixture)."""
    others = joint.sum(axis=player, keepdims=True)
    return np.sum(stack[player] * others, axis=tuple(a for a in range(joint.ndim) if a != player))


def regrets(stack: np.ndarray, joint: np.ndarray) -> np.ndarray:
    """Per player: max(0, best deviation payoff - expected payoff). Their sum is the PSRO gap
    in the restricted game: NashConv for a product distribution, the CCE gap for a joint one
    (deviations against the others' joint marginal); 0 exactly at an equilibrium."""
    values = expected_payoffs(stack, joint)
    return np.array(
        [max(0.0, float(deviation_payoffs(stack, joint, i).max() - values[i]))
         for i in range(stack.shape[0])]
    )


@dataclass(frozen=True)
class MetaSolution:
    """A solution concept's answer: a joint distribution and each player's marginal."""

    concept: str
    joint: np.ndarray
    marginals: list[np.ndarray] = field(default_factory=list)
    #: Anything the solver wants to say about how it got there (e.g. a degenerate fallback).
    note: str = ""
    #: True for a product of independent mixtures (replicator dynamics, Nash): its gap
    #: (the sum of `regrets`) is then NashConv; for a joint distribution it is the CCE gap.
    product: bool = False

    @classmethod
    def of(cls, concept: str, joint: np.ndarray, note: str = "", *,
           product: bool = False) -> MetaSolution:
        joint = np.clip(np.asarray(joint, dtype=float), 0.0, None)
        total = joint.sum()
        if total <= 0.0:
            raise MetaGameError(f"{concept}: the solver returned no probability mass")
        joint = joint / total
        return cls(concept=concept, joint=joint, marginals=marginals(joint), note=note,
                   product=product)

    @property
    def gap_name(self) -> str:
        """What the sum of regrets measures for this kind of distribution."""
        return "nash_conv" if self.product else "cce_gap"

    def payoffs(self, stack: np.ndarray) -> np.ndarray:
        return expected_payoffs(stack, self.joint)

    def welfare(self, stack: np.ndarray) -> float:
        return float(self.payoffs(stack).sum())
