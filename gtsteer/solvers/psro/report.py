"""Per-iteration PSRO report data (pydantic: it becomes the run's summary.json)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from gtsteer.llm import LLMCalls
from gtsteer.solvers.meta import META_SOLVERS, MetaSolution, StopRule, regrets
from gtsteer.solvers.meta.registry import names_text
from gtsteer.solvers.psro.metagame import MetaGame
from gtsteer.solvers.psro.oracles import OracleResult
from gtsteer.solvers.psro.reference import ReferenceReport

#: Why a run stopped before its last iteration. "converged": every oracle scored candidates
#: and none improved (the stop rule held). NO_CANDIDATE: the stop rule held, but some oracle's
#: proposer produced nothing usable (empty, unparsable, duplicates only, a failed call), so
#: that player's best response was never searched: not a convergence.
CONVERGED = "converged"
NO_CANDIDATE = "proposer produced no candidate"


class PSROConfig(BaseModel):
    """The loop's parameters (the driver adds config path and models)."""

    iterations: int = Field(3, ge=0, le=100)
    candidates: int = Field(4, ge=1, le=64)
    operator: Literal["shotgun", "better", "trajectory", "categorical"] = "shotgun"
    #: A name in `META_SOLVERS` (checked when validated, so a registered one is accepted).
    meta_solver: str = "rd"
    seed: int = 0
    #: The instruction key PSRO grows (default: the spec's only key).
    key: str | None = None
    cce_tie_break: Literal["entropy", "none"] = "entropy"
    #: Stop early when an iteration adds no instruction for any player.
    stop_when_converged: bool = True
    #: Opponent instructions whose meta-strategy probability is at most this are left out when
    #: candidates are scored (their branches are never expanded). RD's projection floor leaves
    #: dominated instructions at ~1e-6; the error this can cause is at most the left-out mass
    #: times the payoff span, and the mass is reported per oracle. 0 scores against every one.
    support_tolerance: float = Field(1e-4, ge=0, lt=1)
    #: Players whose populations grow (their oracles run); None: every player. The others keep
    #: their instructions (e.g. one side is fixed, or OpenSpiel's example, which grows
    #: player 0 only).
    oracle_players: list[int] | None = Field(None, min_length=1)
    #: The run has converged only when no oracle adds an instruction AND the driver's gap in
    #: the restricted game (NashConv or CCE gap) is at most this times the meta-game's payoff
    #: span (its largest entry minus its smallest).
    gap_tolerance: float = Field(1e-3, ge=0)
    #: Re-score each adopted instruction and its baseline on fresh LLM samples (a second set
    #: of `num_llm_seeds` samples of the same positions, as `gtsteer solve --heldout`).
    heldout: bool = False
    #: With `heldout`: adopt an instruction only when it also beats its baseline there (the
    #: baseline chosen in-sample; a rejection is recorded and is no convergence).
    heldout_gate: bool = False
    #: Also solve and report the exact `nash` when another concept drives (2 players only):
    #: its MILP is exponential in the worst case (`gtsteer.solvers.meta.nash`).
    report_nash: bool = False

    @field_validator("meta_solver")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in META_SOLVERS:  # worded as pydantic words a Literal's error
            raise PydanticCustomError("literal_error", "Input should be {expected}",
                                      {"expected": names_text()})
        return name

    @field_validator("heldout_gate")
    @classmethod
    def _gate_needs_heldout(cls, gate: bool, info: ValidationInfo) -> bool:
        # a field error (not a model one), so the CLI's message names the flag it came from
        if gate and not info.data.get("heldout", False):
            raise ValueError("needs heldout, the fresh-sample check it gates on")
        return gate


class SolutionReport(BaseModel):
    """A solution concept on the iteration's meta-game."""

    concept: str
    #: Per player, instruction -> probability.
    marginals: list[dict[str, float]]
    #: Joint distribution over profiles (nested lists, player 0 outermost).
    joint: Any
    payoffs: list[float]
    welfare: float
    #: Per player: best deviation payoff in the restricted game minus expected payoff (>= 0).
    regret: list[float]
    #: Sum of regrets: the PSRO gap of this meta-strategy in the restricted game.
    gap: float
    #: What `gap` is: "nash_conv" for a product distribution (rd, nash), "cce_gap" for a joint
    #: one (cce, mecce, nbs: deviations against the others' joint marginal).
    gap_name: Literal["nash_conv", "cce_gap"] = "cce_gap"
    note: str = ""

    @classmethod
    def of(cls, sol: MetaSolution, stack: np.ndarray, labels: list[list[str]]) -> SolutionReport:
        reg = regrets(stack, sol.joint)
        return cls(
            concept=sol.concept,
            marginals=[{label: _r(p) for label, p in zip(ls, m, strict=True)}
                       for ls, m in zip(labels, sol.marginals, strict=True)],
            joint=_nested(sol.joint),
            payoffs=[_r(v) for v in sol.payoffs(stack)],
            welfare=_r(sol.welfare(stack)),
            regret=[_r(v) for v in reg],
            gap=_r(float(reg.sum())),
            gap_name=sol.gap_name,
            note=sol.note,
        )


class MetaGameReport(BaseModel):
    labels: list[list[str]]
    #: Per player tensor (nested lists): mean over instances.
    mean: list[Any]
    #: Per-entry 95% Student-t interval across instances (null with one instance).
    ci_low: list[Any] | None
    ci_high: list[Any] | None
    instances: list[int]
    failures: dict[int, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, mg: MetaGame) -> MetaGameReport:
        interval = mg.interval()
        return cls(
            labels=mg.labels,
            mean=[_nested(t) for t in mg.mean],
            ci_low=None if interval is None else [_nested(t) for t in interval[0]],
            ci_high=None if interval is None else [_nested(t) for t in interval[1]],
            instances=mg.instances,
            failures=mg.failures,
        )


class LLMWork(LLMCalls):
    """Requests to every model the iteration used (dialogue, reward and proposer)."""

    #: The proposer's share, when it is a different model object than the game's.
    proposer_requests: int = 0
    proposer_new_calls: int = 0


class IterationReport(BaseModel):
    iteration: int
    populations: list[list[str]]
    #: Every action of the grown game (evaluated candidates stay: ids never change).
    game_actions: list[str]
    metagame: MetaGameReport
    solutions: dict[str, SolutionReport]
    #: The solution concept whose meta-strategy the oracles answered.
    driver: str
    oracles: list[OracleResult] = Field(default_factory=list)
    #: Per player: the action added this iteration (an existing action when the proposal was
    #: one in other words), or null ("no new instruction").
    added: list[str | None] = Field(default_factory=list)
    #: Per player: the instruction the held-out gate rejected (it beat its baseline in-sample,
    #: not on fresh samples; the oracle's `heldout` has the four scores), or null.
    rejected: list[str | None] = Field(default_factory=list)
    #: The driver's gap in this restricted game and the bound `converged` holds it to
    #: (`gap_tolerance` x the meta-game's payoff span).
    gap: float = 0.0
    gap_limit: float = 0.0
    #: What `converged` tests for this driver (its `META_SOLVERS` entry): "gap", or "nothing_added"
    #: (`nbs`, whose gap is reported but is no stopping test).
    stop_rule: StopRule = "gap"
    #: This iteration's oracles found no improvement (nothing added, nothing rejected by the
    #: held-out gate) and, with stop_rule "gap", `gap` <= `gap_limit` (always False for the
    #: last report, which has no oracle step). Never true when some oracle's proposer
    #: produced no candidate (`stop` is then `NO_CANDIDATE`).
    converged: bool = False
    #: Why the run stopped after this iteration (`CONVERGED` or `NO_CANDIDATE`), or null.
    stop: str | None = None
    #: With a reference game (`gtsteer psro --reference`): the driver's meta-strategy played
    #: in the full game of each instance (`gtsteer.solvers.psro.reference`).
    reference: ReferenceReport | None = None
    llm: LLMWork = Field(default_factory=LLMWork)
    wall_s: float = 0.0


class PSROResult(BaseModel):
    config: PSROConfig
    key: str
    iterations: list[IterationReport]
    converged: bool
    final_populations: list[list[str]]
    #: Why the run stopped early (`CONVERGED`, `NO_CANDIDATE`), or null: it ran every iteration.
    stop_reason: str | None = None

    def numbers(self) -> dict[str, Any]:
        """Everything but timings and LLM accounting: identical across reruns."""
        data = self.model_dump(mode="json")
        for it in data["iterations"]:
            it.pop("wall_s")
            it.pop("llm")
        return data


def _r(x: float, digits: int = 10) -> float:
    """Rounded so a rerun's JSON is byte-identical despite float summation order."""
    return round(float(x), digits) + 0.0


def _nested(arr: np.ndarray) -> Any:
    return np.vectorize(_r, otypes=[float])(np.asarray(arr, dtype=float)).tolist()
