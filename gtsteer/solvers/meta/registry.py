"""The one registry of meta-solvers: name -> `MetaSolver` (as OpenSpiel's
`META_STRATEGY_METHODS`). PSRO's accepted `meta_solver` values, the CLI's `--meta-solver` help,
the solutions each iteration reports (in this order) and each driver's stop rule all come from
`META_SOLVERS`: a new concept is its module in this folder and one entry below."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from gtsteer.solvers.meta.bargaining import nash_bargaining
from gtsteer.solvers.meta.cce import max_entropy_cce, max_welfare_cce
from gtsteer.solvers.meta.common import MetaSolution
from gtsteer.solvers.meta.nash import two_player_nash
from gtsteer.solvers.meta.replicator import replicator_dynamics

#: When a PSRO run driven by a concept has converged: "gap": no oracle found an improvement and
#: the driver's restricted-game gap is within `gap_tolerance` (an equilibrium concept);
#: "nothing_added": no oracle found an improvement (a concept that is no equilibrium, such as
#: the Nash bargaining solution: its CCE gap stays positive however long the run goes).
StopRule = Literal["gap", "nothing_added"]


@dataclass(frozen=True)
class MetaInputs:
    """What a meta-game offers besides its payoff stack."""

    #: Each player's payoff when every player plays `any` (the bargaining threat point).
    disagreement: Sequence[float]
    #: How the maximum-welfare CCE breaks ties ("entropy" or "none").
    tie_break: str = "entropy"


@dataclass(frozen=True)
class MetaSolver:
    """One solution concept PSRO can report and drive its oracles with."""

    solve: Callable[[np.ndarray, MetaInputs], MetaSolution]
    stop_rule: StopRule = "gap"
    #: The number of players it is defined for; None: any.
    players: int | None = None
    #: Solved only when it drives or `report_nash` asks (an exponential worst case).
    on_demand: bool = False
    #: Said after its name in `gtsteer psro --help` ("" says nothing).
    help: str = ""


META_SOLVERS: dict[str, MetaSolver] = {
    "rd": MetaSolver(lambda s, _: replicator_dynamics(s)),
    "nash": MetaSolver(lambda s, _: two_player_nash(s), players=2, on_demand=True,
                       help="exact, 2 players"),
    "cce": MetaSolver(lambda s, i: max_welfare_cce(s, tie_break=i.tie_break),  # type: ignore[arg-type]
                      help="max welfare"),
    "mecce": MetaSolver(lambda s, _: max_entropy_cce(s), help="max entropy"),
    "nbs": MetaSolver(lambda s, i: nash_bargaining(s, i.disagreement), "nothing_added"),
}


def names_text() -> str:
    """The registered names as pydantic lists a Literal's: `'rd', 'nash' or 'cce'`."""
    *most, last = (repr(n) for n in META_SOLVERS)
    return f"{', '.join(most)} or {last}" if most else last


def help_text() -> str:
    """`--meta-solver`'s help, from the registry as it is when the command is built."""
    said = "; ".join(f"{n}: {s.help}" for n, s in META_SOLVERS.items() if s.help)
    return f"{' | '.join(META_SOLVERS)} (drives the oracles; {said})"
