"""The result files of `gtsteer solve`: `summary.json` and `games/<i>.json`.

These pydantic models are the documented schema (see docs/SOLVE.md). Everything in them is a
pure function of (config, model, seeds, solver, iterations) except `llm_calls`, which says what
this particular run had to ask the model (zero new calls on a rerun).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from gtsteer.solvers.analysis import GameValues
from gtsteer.solvers.metrics import MeanCI

SCHEMA_VERSION = 1


class Metric(MeanCI):
    """One metric: the value per solved instance (in `instances` order), mean and 95% t-CI."""

    per_instance: list[float]


class Metrics(BaseModel):
    #: Sum over players of best-response gain against the CFR average policy (OpenSpiel).
    nash_conv: Metric
    #: nash_conv / (payoff max - payoff min), comparable across domains.
    nash_conv_normalized: Metric
    #: V_i(i plays CFR, others `any`) - V_i(all `any`), averaged over players i.
    cfr_gain: Metric


class HeadToHead(BaseModel):
    """values[row][col]: mean over instances and players i of V_i(i plays row, others col)."""

    strategies: list[str]
    values: dict[str, dict[str, float]]


class InstructionDistribution(BaseModel):
    """P(first instruction) of one player under the CFR policy, chance-weighted, mean over
    instances."""

    player: int
    role: str
    probs: dict[str, float]


class LLMCalls(BaseModel):
    requests: int
    cache_hits: int
    new_calls: int


class Failure(BaseModel):
    instance: int
    stage: str  # "expand" or "solve"
    reason: str


class SolveSummary(BaseModel):
    """`DIR/summary.json`."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    seed: int  # instance-generation seed
    num_games: int
    num_llm_seeds: int  # chance outcomes per message (the spec's LLM sample seeds 0..n-1)
    solver: str  # "cfr" or "cfr+"
    iterations: int
    solver_backend: str  # which OpenSpiel implementation ran (C++ on the cached tree, or Python)
    payoff_bounds: tuple[float, float]
    instances: list[int]  # indices of the solved instances, the order of every per_instance list
    metrics: Metrics | None  # None when no instance was solved
    head_to_head: HeadToHead | None
    instruction_distribution: list[InstructionDistribution]
    llm_calls: LLMCalls
    failures: list[Failure] = Field(default_factory=list)
    clipped_rewards: int = 0  # terminal rewards clipped to payoff bounds, all instances

    def numbers(self) -> dict[str, Any]:
        """Everything that must be identical on a rerun (all but `llm_calls`)."""
        return self.model_dump(exclude={"llm_calls"})


class InfoStatePolicy(BaseModel):
    player: int
    info_state: str
    probs: dict[str, float]  # instruction label -> probability under the average policy


class GameRecord(BaseModel):
    """`DIR/games/<i>.json`: one instance, its policy and values (or why it failed)."""

    index: int
    instance: dict[str, Any]
    status: str  # "solved" or "failed"
    failure: str | None = None
    failure_stage: str | None = None  # "expand" or "solve"
    expansion: dict[str, Any] | None = None
    info_states: int = 0
    policy: list[InfoStatePolicy] = Field(default_factory=list)
    values: GameValues | None = None
