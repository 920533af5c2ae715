"""The result files of `gtsteer solve`: `summary.json` and `games/<i>.json`.

These pydantic models are the documented schema (see docs/SOLVE.md). Everything in them is a
pure function of (config, model, seeds, solver, iterations) except `llm_calls` and `llm_cost_usd`,
which say what this particular run had to ask the model (zero new calls on a rerun), and
`llm_modes`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gtsteer.evals.solve_metrics import HeadToHead, HeldOutMetrics, InstructionDistribution, Metrics
from gtsteer.llm import LLMCalls
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import RunResult
from gtsteer.solvers.analysis import GameValues
from gtsteer.solvers.heldout import HeldOutGain

#: 7: every normalised number (`*_normalized`, also per game and held-out) divides by the
#: config's payoff range (`payoff_bounds`), not by the instance's own bounds, which a domain
#: may narrow per deal (fruit); Table 1 reads these (`solvers.metrics.normalized`).
#: 6: the responder is also compared with the first mover on its solved opening
#: (`VersusBaseline.others`), and the fresh tree expands those branches.
#: 5: each player's fresh-sample value against the baselines (`heldout_metrics.versus`).
#: 4: message seeds drawn from the chance path (other samples than 3's); the held-out gain per
#: player and decision depth, its clean part and the text-reading replays (`heldout_metrics`).
#: 3: optional held-out CFR gain (`heldout`, `cfr_gain_heldout`, `heldout_*`).
#: 2: nash_conv_normalized divides by players x range; cfr_gain_normalized; deals; failures
#: counted; head-to-head fixed rows are named `always:<instruction>`.
SCHEMA_VERSION = 7


class Failure(BaseModel):
    instance: int
    stage: str  # "build", "expand", "solve" or "metrics"
    reason: str  # "<exception type>: <message>" (or the expansion's reason)


class SolveSummary(RunResult):
    """`DIR/summary.json` (`folder`: the DIR this run wrote)."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    #: Which model wrote the messages and scored the rewards, and where it came from.
    roles: dict[str, RoleRecord] = Field(default_factory=dict)
    seed: int  # instance-generation seed
    #: JSONL file the instances came from (`--instances`); None: generated from `seed`.
    instances_file: str | None = None
    num_games: int  # instances attempted
    #: "per_instance": each instance is its own game (the solver sees every private fact);
    #: "dealt": a root chance node deals one of `num_deals` private-information draws.
    mode: Literal["per_instance", "dealt"] = "per_instance"
    num_deals: int = 1
    num_solved: int = 0
    num_failed: int = 0  # == len(failures)
    #: chance outcomes per message (the spec's LLM sample seeds 0..n-1), or one count per depth
    num_llm_seeds: int | list[int]
    solver: str  # "cfr" or "cfr+"
    iterations: int
    solver_backend: str  # which OpenSpiel implementation ran (C++ on the cached tree, or Python)
    payoff_bounds: tuple[float, float]  # the config's; each game record has its own
    instances: list[int]  # indices of the solved instances, the order of every per_instance list
    metrics: Metrics | None  # None when no instance was solved
    head_to_head: HeadToHead | None
    instruction_distribution: list[InstructionDistribution]
    llm_calls: LLMCalls
    #: What this run's new model calls cost in USD, as the provider's prices give it (litellm's
    #: cost per response; 0 for local and fake models), summed over Ray workers too; None
    #: (unknown) where litellm's cost map has no price for a model that was called.
    llm_cost_usd: float | None = 0.0
    #: How the model served structured output and `choose` in this run (`LLM.capabilities`:
    #: e.g. `json_object` and `loglik` for llama.cpp's server); None where it was not asked.
    llm_modes: dict[str, str | None] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)
    clipped_rewards: int = 0  # terminal rewards clipped to payoff bounds, all instances
    echoed_messages: int = 0  # messages that repeated their instruction (stripped), all instances
    heldout: bool = False  # whether the held-out CFR gain was measured (`--heldout`)
    #: Solved instances whose held-out gain was measured (a failed held-out tree is left out).
    heldout_instances: list[int] = Field(default_factory=list)
    #: Over those instances: decision positions the held-out gain replayed the policy at, and
    #: how many of them the solved tree had only under other samples (`borrowed`) or not at
    #: all (`unmatched`, played `any`: pulls the held-out gain toward 0).
    heldout_decisions: int = 0
    heldout_borrowed: int = 0
    heldout_unmatched: int = 0
    #: Dealt games: decisions whose replayed policy mixed solved information states of deals
    #: the player cannot tell apart (see `gtsteer.solvers.heldout`).
    heldout_pooled: int = 0
    #: The held-out gain per replay, player and depth, and its clean part (None without it).
    heldout_metrics: HeldOutMetrics | None = None

    def numbers(self) -> dict[str, Any]:
        """Everything that must be identical on a rerun (all but `llm_calls`, `llm_cost_usd`
        and `llm_modes`, which a rerun answered from the cache never finds out)."""
        return self.model_dump(exclude={"llm_calls", "llm_cost_usd", "llm_modes"})

    def policies(self) -> dict[int, list[InfoStatePolicy]]:
        """Each solved instance's CFR policy (average strategy per information state), read
        from the run folder's `games/<i>.json`."""
        return {i: GameRecord.model_validate_json(
            (self.folder / "games" / f"{i}.json").read_text(encoding="utf-8")).policy
            for i in self.instances}


class InfoStatePolicy(BaseModel):
    player: int
    info_state: str
    probs: dict[str, float]  # instruction label -> probability under the average policy


class GameRecord(BaseModel):
    """`DIR/games/<i>.json`: one instance, its policy and values (or why it failed)."""

    #: The same version as the run's summary.json (the two are written and read together).
    schema_version: int = SCHEMA_VERSION
    index: int
    instance: dict[str, Any]
    status: str  # "solved" or "failed"
    failure: str | None = None
    failure_stage: str | None = None  # "build", "expand", "solve" or "metrics"
    #: The game's payoff range (utilities with derived bounds make it per instance).
    payoff_bounds: tuple[float, float] | None = None
    #: Dealt mode: each deal's private information, in deal order (deal 0 is `instance`'s).
    deals: list[list[dict[str, str]]] = Field(default_factory=list)
    expansion: dict[str, Any] | None = None
    info_states: int = 0
    policy: list[InfoStatePolicy] = Field(default_factory=list)
    values: GameValues | None = None
    heldout: HeldOutGain | None = None
    #: Why the held-out tree failed (the in-sample result above still stands).
    heldout_failure: str | None = None
    #: Which CFR implementation solved it ("" where it was not solved): a resumed run's
    #: summary reads it from the records it keeps.
    solver_backend: str = ""
    #: Hash of what decided this record (`gtsteer.runs.solve.run_key`): `--resume` keeps it.
    run_key: str | None = None
