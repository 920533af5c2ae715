"""Meta-solvers for normal-form meta-games (PSRO): one solution concept per module.

    stack = np.array([u0, u1])                 # per-player payoff tensors, never symmetrised
    replicator_dynamics(stack).marginals       # rd: a product distribution
    two_player_nash(stack).marginals           # nash: exact, 2 players
    max_welfare_cce(stack).joint               # cce: a joint distribution
    max_entropy_cce(stack).joint               # mecce: JPSRO's CCE
    nash_bargaining(stack, disagreement=[0, 0])

`META_SOLVERS` (`registry.py`) names each for PSRO: a new one is a module here and one entry.
"""

from gtsteer.solvers.meta.bargaining import nash_bargaining
from gtsteer.solvers.meta.cce import cce_constraints, max_entropy_cce, max_welfare_cce
from gtsteer.solvers.meta.common import (
    MetaGameError,
    MetaSolution,
    check_stack,
    deviation_payoffs,
    expected_payoffs,
    marginals,
    product,
    regrets,
)
from gtsteer.solvers.meta.nash import two_player_nash
from gtsteer.solvers.meta.registry import META_SOLVERS, MetaInputs, MetaSolver, StopRule
from gtsteer.solvers.meta.replicator import replicator_dynamics

__all__ = [
    "META_SOLVERS",
    "MetaInputs",
    "MetaSolver",
    "StopRule",
    "MetaGameError",
    "MetaSolution",
    "cce_constraints",
    "check_stack",
    "deviation_payoffs",
    "expected_payoffs",
    "marginals",
    "max_entropy_cce",
    "max_welfare_cce",
    "nash_bargaining",
    "product",
    "regrets",
    "replicator_dynamics",
    "two_player_nash",
]
