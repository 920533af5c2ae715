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

from gtsteer.binding import generate_instances, make_game
from gtsteer.domains import load_spec
from gtsteer.llm import LLM, LLMCalls
from gtsteer.runs.models import Endpoint, RoleRecord, pick_roles
from gtsteer.runs.output import (
    RunResult,
    finish_run_dir,
    prepare_run_dir,
    run_folder,
    save_png,
    write_json,
    write_text,
)
from gtsteer.runs.psro_games import games_on_ray
from gtsteer.runs.solve import DEFAULT_MAX_CALLS, check_tree_size
from gtsteer.runs.units import RayOptions, ray_session
from gtsteer.solvers.nfg import to_nfg
from gtsteer.solvers.psro import IterationReport, PSROConfig, PSROResult, run_psro, serial_map
from gtsteer.solvers.psro.report import META_SOLVERS

#: 2: `nash` and `mecce` solutions, `gap_name`, per-iteration `gap`/`gap_limit`/`converged`,
#: the oracles' `proposed` and `heldout`. 3: per-iteration `rejected` and `stop_rule`, the
#: held-out baseline fixed in-sample (with both sides' in-sample scores), `nash` solved only
#: when it drives or `report_nash` asks.
SCHEMA_VERSION = 3
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
    num_llm_seeds: int
    #: 1: one game per instance; K > 1: each instance's root deals 1 of K private-info draws.
    num_deals: int = 1
    payoff_bounds: tuple[float, float]
    settings: PSROConfig
    key: str
    converged: bool
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


def psro_config(
    config_path: str | Path,
    llm: str | LLM | None = None,
    proposer_llm: str | LLM | None = None,
    games: int = 1,
    settings: PSROConfig | None = None,
    out_dir: str | Path | None = None,
    deals: int | None = None,
    *,
    on_iteration: Callable[[IterationReport], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    max_calls: int | None = DEFAULT_MAX_CALLS,
    report: Callable[[str], None] | None = None,
    endpoint: Endpoint | None = None,
    ray: RayOptions | None = None,
    export_nfg: bool = False,
) -> PSROSummary:
    """Run PSRO on `games` instances of a domain config; write summary.json and the plot.

    `deals` (default: the config's `num_deals`) > 1 plays each instance as a dealt game (its
    root chance node deals one of `deals` private-information draws), as in `gtsteer solve`.
    `llm`/`proposer_llm` None: the config's `models.writer`/`models.proposer`, else `local`
    and the writer (`gtsteer.runs.models.pick`). `ray` runs each meta-game build's
    per-instance expansions as Ray tasks (`gtsteer.runs.psro_games`); the results are the
    same, and the proposer stays in this process. `export_nfg` also writes each iteration's
    meta-game (mean over instances) as `iterations/<t>.nfg`, for Gambit."""
    settings = settings or PSROConfig()
    if games < 1:
        raise ValueError(f"games: must be >= 1, got {games}")
    spec = load_spec(config_path)  # ConfigError (also the domain's own checks) before any LLM
    if deals is not None:
        spec = spec.with_deals(deals)
    # the starting trees, before any LLM call (each adopted instruction grows them further)
    check_tree_size(spec, games, max_calls, report=report)
    model, others, roles = pick_roles(spec, endpoint, llm, proposer=proposer_llm)
    proposer = others["proposer"]
    model_name, proposer_name = model.model, proposer.model
    out = prepare_run_dir(run_folder("psro", config_path, model, settings.seed, out_dir),
                          subdirs=("iterations",), summary="summary.json")
    instances = generate_instances(spec, games, settings.seed)
    dialogue_games = [make_game(spec, inst, model, config=str(config_path), seed=settings.seed)
                      for inst in instances]
    befores = [m.usage for m in _distinct(model, proposer)]

    def record(report: IterationReport) -> None:
        write_json(out / "iterations" / f"{report.iteration}.json", report)
        if export_nfg:
            write_text(out / "iterations" / f"{report.iteration}.nfg",
                       metagame_nfg(report, spec.name, list(spec.players)))
        if on_iteration is not None:
            on_iteration(report)

    with ray_session(ray):
        result = run_psro(dialogue_games, proposer, settings, on_iteration=record,
                          on_phase=on_phase,
                          map_games=serial_map if ray is None else games_on_ray(model, ray))
    totals = sum((m.usage.since(before)
                  for m, before in zip(_distinct(model, proposer), befores, strict=True)),
                 LLMCalls())
    summary = PSROSummary(
        config=str(config_path), domain=spec.name, model=model_name,
        proposer_model=proposer_name, roles=roles, num_games=games, num_llm_seeds=spec.num_llm_seeds,
        num_deals=spec.num_deals, payoff_bounds=(spec.payoff.min, spec.payoff.max),
        settings=settings, key=result.key,
        converged=result.converged, final_populations=result.final_populations,
        iterations=result.iterations, llm_calls=totals,
    )
    finish_run_dir(out, "summary.json", summary)
    plot_payoffs(result, out / PLOT, roles=list(spec.players),
                 title=f"{spec.name}: PSRO ({settings.operator} oracle, "
                       f"{settings.meta_solver} meta-strategy)")
    return summary.written_to(out)


def metagame_nfg(report: IterationReport, domain: str, players: list[str]) -> str:
    """An iteration's meta-game (the mean over instances each solution concept solved) as
    Gambit `.nfg` text: strategies are the populations' instructions."""
    mg = report.metagame
    return to_nfg(mg.mean, mg.labels, players=players,
                  title=f"{domain}: PSRO meta-game, iteration {report.iteration}",
                  comment=f"mean payoffs over instances {mg.instances}; one instruction per"
                          " player for all of its messages")


def _distinct(*models: LLM) -> list[LLM]:
    return list({id(m): m for m in models}.values())


def plot_payoffs(result: PSROResult, path: Path, title: str = "",
                 roles: list[str] | None = None) -> Path:
    """One panel per solution concept: each player's expected payoff and the welfare per
    iteration (the paper's Figures 3-4 track the same quantities)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
