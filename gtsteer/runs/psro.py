"""`gtsteer psro`: config -> instances -> PSRO over instructions -> summary.json + payoffs.png.

A run is a pure function of (config, models, seed, settings): the config is validated before any
LLM call, every dialogue, reward and proposer answer comes through the on-disk cache, and the
meta-solvers are deterministic, so a rerun makes no new call and writes the same numbers; a
killed run restarted reuses every call that had finished. Schema: docs/PSRO.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from gtsteer.binding import DomainSpec, ExpansionError, Instance, expand_sync, make_game
from gtsteer.binding.llm_instances import check_fits
from gtsteer.domains import load_spec
from gtsteer.llm import LLM, LLMCalls
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import (
    RunResult,
    finish_run_dir,
    prepare_run_dir,
    pyplot,
    save_png,
    write_json,
    write_text,
)
from gtsteer.runs.psro_games import game_map
from gtsteer.runs.solve import (
    DEFAULT_ITERATIONS,
    DEFAULT_MAX_CALLS,
    DEFAULT_SOLVER,
    check_tree_size,
    load_instances,
)
from gtsteer.solvers import solve_cfr
from gtsteer.solvers.meta import META_SOLVERS
from gtsteer.solvers.nfg import to_nfg
from gtsteer.solvers.psro import IterationReport, PSROConfig, PSROResult, run_psro
from gtsteer.solvers.psro.reference import (
    ConstantReference,
    ReferenceGame,
    best_constant,
    measure_in_reference,
)

#: 4: `instances_file`; per-iteration `reference` (the meta-strategy in a full game).
#: 2: `nash` and `mecce` solutions, `gap_name`, per-iteration `gap`/`gap_limit`/`converged`,
#: the oracles' `proposed` and `heldout`. 3: per-iteration `rejected` and `stop_rule`, the
#: held-out baseline fixed in-sample (with both sides' in-sample scores), `nash` solved only
#: when it drives or `report_nash` asks. 5: `stop_reason` and per-iteration `stop` (a
#: proposer that produced no candidate is no convergence). 6: `constant_reference` (the
#: reference game's best constant mixture).
SCHEMA_VERSION = 6
PLOT = "payoffs.png"


class PSROSummary(RunResult):
    """summary.json of a PSRO run (docs/PSRO.md)."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    proposer_model: str
    #: Which model played each role (writer, proposer) and where it came from.
    roles: dict[str, RoleRecord] = Field(default_factory=dict)
    num_games: int
    #: The instances file the run solved (`--instances`), else null (generated instances).
    instances_file: str | None = None
    #: The full game each iteration's meta-strategy is measured in (`--reference`), else null.
    reference: str | None = None
    #: The reference game's best constant mixture (one instruction per player for every
    #: instance), in-sample and on fresh samples: the bar a meta-strategy can reach.
    constant_reference: ConstantReference | None = None
    num_llm_seeds: int | list[int]
    #: 1: one game per instance; K > 1: each instance's root deals 1 of K private-info draws.
    num_deals: int = 1
    payoff_bounds: tuple[float, float]
    settings: PSROConfig
    key: str
    converged: bool
    #: Why the run stopped early ("converged", "proposer produced no candidate"), or null.
    stop_reason: str | None = None
    final_populations: list[list[str]]
    iterations: list[IterationReport]
    llm_calls: LLMCalls
    plot: str = PLOT

    def numbers(self) -> dict[str, Any]:
        """Everything except timings and LLM accounting (identical on a rerun)."""
        data = self.model_dump(mode="json", exclude={"llm_calls"})
        for it in data["iterations"]:
            it.pop("wall_s")
            it.pop("llm")
        return data


class PSROOptions(Options):
    """`gtsteer psro`'s options: the algorithm's settings (`PSROConfig`, recorded in the
    summary) and the run's (the models, the folder and Ray come with the run context)."""

    settings: PSROConfig = Field(default_factory=PSROConfig)
    #: Generated instances (`--games`); ignored with `instances_file`.
    games: int = 1
    #: Private-information draws dealt at the root (None: the config's `num_deals`).
    deals: int | None = None
    #: Refuse a run whose starting trees need more requests (None: no bound).
    max_calls: int | None = DEFAULT_MAX_CALLS
    #: Also write each iteration's meta-game as `iterations/<t>.nfg` (`--export-nfg`).
    export_nfg: bool = False
    #: Play the instances of this JSONL file (`--instances`) instead of generated ones.
    instances_file: str | Path | None = None
    #: A config of the same domain with the full action set (`--reference`).
    reference: str | Path | None = None


@driver("psro")
def run(config: str | Path, ctx: RunContext, options: PSROOptions) -> PSROSummary:
    """`gtsteer psro`: run PSRO on the instances of a domain config; write summary.json,
    `iterations/<t>.json` and the plot. `ctx.on_phase` hears what the run is doing, `ctx.on_step`
    gets each iteration's report once it is written. Each meta-game build's per-instance
    expansions are units of the context's executor (on Ray: tasks, `gtsteer.runs.psro_games`),
    with the same results; the proposer stays in this process. `reference`, a config of the
    same domain with the full action set, is solved (CFR) on every instance, and each
    iteration's driving meta-strategy is measured in it (`IterationReport.reference`: its
    NashConv there, its gain over `any` beside the full game's CFR gain, and, with `heldout`,
    that gain on fresh samples)."""
    settings, reference, report, on_phase = (options.settings, options.reference, ctx.report,
                                             ctx.on_phase)
    spec, instances = load_instances(config, options.games, options.deals,
                                     options.instances_file, settings.seed)
    games = len(instances)
    full = _reference_spec(reference, spec, settings.key, instances, options.deals) \
        if reference is not None else None
    # the starting trees, before any LLM call (each adopted instruction grows them further)
    check_tree_size(spec, games, options.max_calls, report=report)
    if full is not None:
        check_tree_size(full, games, options.max_calls, heldout=settings.heldout, report=report)
    model, others, roles = ctx.roles(spec, "proposer")
    proposer = others["proposer"]
    out = prepare_run_dir(ctx.folder("psro", config, model, settings.seed),
                          subdirs=("iterations",), summary="summary.json")
    dialogue_games = [make_game(spec, inst, model, config=str(config), seed=settings.seed)
                      for inst in instances]
    befores = [m.usage for m in _distinct(model, proposer)]
    references = [] if full is None else _reference_games(
        full, instances, model, str(reference), settings, on_phase)
    if references and on_phase is not None:
        on_phase("reference game: the best constant mixture")
    constant = best_constant(references) if references else None

    record = _iteration_writer(out, spec, references, options.export_nfg, on_phase, ctx.on_step)
    with ctx.executor.session():
        result = run_psro(dialogue_games, proposer, settings, on_iteration=record,
                          on_phase=on_phase, map_games=game_map(ctx.executor, model))
    totals = sum((m.usage.since(before)
                  for m, before in zip(_distinct(model, proposer), befores, strict=True)),
                 LLMCalls())
    summary = PSROSummary(
        config=str(config), domain=spec.name, model=model.model,
        proposer_model=proposer.model, roles=roles, num_games=games,
        instances_file=None if options.instances_file is None else str(options.instances_file),
        reference=None if reference is None else str(reference),
        constant_reference=constant, num_llm_seeds=spec.num_llm_seeds,
        num_deals=spec.num_deals, payoff_bounds=(spec.payoff.min, spec.payoff.max),
        settings=settings, key=result.key,
        converged=result.converged, stop_reason=result.stop_reason,
        final_populations=result.final_populations,
        iterations=result.iterations, llm_calls=totals,
    )
    finish_run_dir(out, "summary.json", summary)
    plot_payoffs(result, out / PLOT, roles=list(spec.players),
                 title=f"{spec.name}: PSRO ({settings.operator} oracle, "
                       f"{settings.meta_solver} meta-strategy)")
    return summary.written_to(out)


def _iteration_writer(out: Path, spec: DomainSpec, references: list[ReferenceGame],
                      export_nfg: bool, on_phase: Callable[[str], None] | None,
                      on_iteration: Callable[[IterationReport], None] | None
                      ) -> Callable[[IterationReport], None]:
    """What PSRO calls with each finished iteration: measure its driving meta-strategy in the
    reference games, write `iterations/<t>.json` (and `.nfg`), then tell `on_iteration`."""

    def record(report: IterationReport) -> None:
        if references:
            if on_phase is not None:
                on_phase(f"iteration {report.iteration}: the meta-strategy in the reference game")
            report.reference = measure_in_reference(
                references, report.solutions[report.driver].marginals, report.driver)
        write_json(out / "iterations" / f"{report.iteration}.json", report)
        if export_nfg:
            write_text(out / "iterations" / f"{report.iteration}.nfg",
                       metagame_nfg(report, spec.name, list(spec.players)))
        if on_iteration is not None:
            on_iteration(report)

    return record


def metagame_nfg(report: IterationReport, domain: str, players: list[str]) -> str:
    """An iteration's meta-game (the mean over instances each solution concept solved) as
    Gambit `.nfg` text: strategies are the populations' instructions."""
    mg = report.metagame
    return to_nfg(mg.mean, mg.labels, players=players,
                  title=f"{domain}: PSRO meta-game, iteration {report.iteration}",
                  comment=f"mean payoffs over instances {mg.instances}; one instruction per"
                          " player for all of its messages")


def _reference_spec(path: str | Path, spec: DomainSpec, key: str | None,
                    instances: list[Instance], deals: int | None) -> DomainSpec:
    """The reference config, checked to be the same game with (possibly) more instructions:
    same domain and players, the grown key present, every instance fitting it."""
    full = load_spec(path)
    if deals is not None:
        full = full.with_deals(deals)
    grown = key or spec.action_keys[0]
    same = {"domain": (full.domain, spec.domain), "players": (full.players, spec.players),
            "action keys": (full.action_keys, spec.action_keys)}
    for what, (theirs, ours) in same.items():
        if theirs != ours:
            raise ValueError(
                f"--reference {path}: its {what} {theirs} differ from the run's {ours}"
            )
    if grown not in full.actions:
        raise ValueError(f"--reference {path}: no action key {grown!r}")
    check_fits(full, instances, [f"instance {i.index}" for i in instances])
    return full


def _reference_games(full: DomainSpec, instances: list[Instance], model: LLM, config: str,
                     settings: PSROConfig, on_phase: Callable[[str], None] | None
                     ) -> list[ReferenceGame]:
    """Each instance's full game expanded and solved as `gtsteer solve` solves it (so a Table 1
    run on the same instances file has paid for its tree already), and with
    `settings.heldout` the same instance on fresh samples."""
    out = []
    for inst in instances:
        if on_phase is not None:
            on_phase(f"reference game: instance {inst.index}")
        game = make_game(full, inst, model, config=config, seed=settings.seed)
        expanded = expand_sync(game, progress=False)
        if expanded.failed:
            raise ExpansionError(f"reference game, instance {inst.index}: {expanded.reason}")
        cfr = solve_cfr(game, solver=DEFAULT_SOLVER, iterations=DEFAULT_ITERATIONS).policy
        fresh = make_game(full, inst, model, config=config, seed=settings.seed,
                          sample_offset=full.max_llm_seeds) if settings.heldout else None
        out.append(ReferenceGame(game, cfr, fresh))
    return out


def _distinct(*models: LLM) -> list[LLM]:
    return list({id(m): m for m in models}.values())


def plot_payoffs(result: PSROResult, path: Path, title: str = "",
                 roles: list[str] | None = None) -> Path:
    """One panel per solution concept: each player's expected payoff and the welfare per
    iteration (the paper's Figures 3-4 track the same quantities)."""
    plt = pyplot()

    its = [r.iteration for r in result.iterations]
    concepts = [c for c in META_SOLVERS if c in result.iterations[0].solutions]
    fig, axes = plt.subplots(1, len(concepts), figsize=(4.2 * len(concepts), 3.4),
                             sharey=True)
    for ax, concept in zip(axes, concepts, strict=True):
        sols = [r.solutions[concept] for r in result.iterations]
        for p in range(len(sols[0].payoffs)):
            name = roles[p] if roles and p < len(roles) else f"player {p}"
            ax.plot(its, [s.payoffs[p] for s in sols], marker="o", label=name)
        ax.plot(its, [s.welfare for s in sols], linestyle="--", color="gray", label="welfare")
        ax.set_title(concept.upper())
        ax.set_xlabel("PSRO iteration")
        ax.set_xticks(its)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("expected payoff")
    axes[-1].legend(fontsize="small")
    fig.tight_layout()
    if title:
        fig.suptitle(title, y=1.04)
    return save_png(fig, path)
