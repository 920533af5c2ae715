"""`gtsteer export CONFIG --format efg`: each instance's expanded game as a Gambit `.efg` file.

The instances are built and expanded exactly as `gtsteer solve` builds them (same spec, deals,
seed and model, through the same cache), so an export after a solve of the same config, model
and seed makes no model call. Per instance it writes `games/<i>.efg` (Gambit's text format, as
OpenSpiel's `efg_game` also reads it) and `games/<i>.efg.json` (the side file,
`gtsteer.solvers.efg.EfgMap`: information-set numbers and labels to gtsteer's
information-state strings and action ids), then `export.json`. The tree -> text algorithm is
`gtsteer.solvers.efg`; this driver only builds, expands and writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from gtsteer.binding import Instance, expand_sync, make_game
from gtsteer.binding import progress as shown
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM, LLMCalls, StorageError
from gtsteer.llm.session import BudgetExceeded
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import (
    RunResult,
    check_out_dir,
    finish_run_dir,
    prepare_run_dir,
    write_json,
    write_text,
)
from gtsteer.runs.solve import DEFAULT_MAX_CALLS, check_tree_size, load_instances
from gtsteer.solvers.efg import EfgExport, to_efg

SUMMARY_FILE = "export.json"
FORMATS = ("efg",)
ExportFormat = Literal["efg"]


class ExportedGame(BaseModel):
    """One instance's files (relative to the run folder) and the size of its tree."""

    index: int
    status: Literal["exported", "failed"]
    efg: str | None = None
    side_file: str | None = None
    #: Information sets per player, as numbered in the file.
    infosets: list[int] = Field(default_factory=list)
    decision_nodes: int = 0
    chance_nodes: int = 0
    terminals: int = 0
    reduced_strategies: list[str] = Field(default_factory=list)
    failure: str | None = None


class ExportSummary(RunResult):
    """export.json: what was exported, from what, and the model calls it took."""

    config: str
    domain: str
    model: str
    roles: dict[str, RoleRecord] = Field(default_factory=dict)
    seed: int
    format: ExportFormat
    num_games: int
    num_deals: int
    num_llm_seeds: int | list[int]
    games: list[ExportedGame]
    llm_calls: LLMCalls


@dataclass(frozen=True)
class ExportJob:
    spec: DomainSpec
    instance: Instance
    config: str
    seed: int
    progress: bool


@dataclass
class ExportOutcome:
    index: int
    export: EfgExport | None = None
    failure: str | None = None


class ExportOptions(Options):
    """`gtsteer export`'s options (the model and the folder come with the run context)."""

    #: The file format (`--format`; `FORMATS`).
    fmt: str = "efg"
    games: int = 1
    seed: int = 0
    #: Private-information draws dealt at the root (None: the config's `num_deals`).
    deals: int | None = None
    #: Refuse a run whose worst-case trees need more requests (None: no bound).
    max_calls: int | None = DEFAULT_MAX_CALLS


@driver("export")
def run(config: str | Path, ctx: RunContext, options: ExportOptions) -> ExportSummary:
    """`gtsteer export`: build and expand `games` instances as `gtsteer solve` does; write one
    `.efg` and side file per instance and `export.json`. An instance whose expansion fails is
    recorded failed (its reason in export.json); the others are still written."""
    if options.fmt not in FORMATS:
        raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {options.fmt!r}")
    if ctx.out is not None:
        check_out_dir(ctx.out)
    spec, chosen = load_instances(config, options.games, options.deals, seed=options.seed)
    shown.expect(check_tree_size(spec, len(chosen), options.max_calls, report=ctx.report))
    model, _, role_models = ctx.roles(spec)
    out = ctx.folder("export", config, model, options.seed)
    prepare_run_dir(out, subdirs=("games",), summary=SUMMARY_FILE)
    jobs = [ExportJob(spec, inst, str(config), options.seed, ctx.progress) for inst in chosen]
    records: list[ExportedGame] = []

    def write_game(_: int, done: ExportOutcome) -> None:
        records.append(_write(out, done))

    units_run = ctx.executor.run(export_instance, jobs, model, on_result=write_game,
                                 label="instances")
    summary = ExportSummary(
        config=str(config), domain=spec.name, model=model.model, roles=role_models,
        seed=options.seed, format="efg", num_games=len(jobs), num_deals=spec.num_deals,
        num_llm_seeds=spec.num_llm_seeds, games=records, llm_calls=units_run.calls,
    )
    finish_run_dir(out, SUMMARY_FILE, summary)
    return summary.written_to(out)


def export_instance(job: ExportJob, model: LLM) -> ExportOutcome:
    """Build and expand one instance as `gtsteer.runs.solve.solve_instance` does, then turn
    its tree into `.efg` text. A failure belongs to this instance (a damaged cache stops)."""
    try:
        game = make_game(job.spec, job.instance, model, config=job.config, seed=job.seed)
        shown.phase("expand")
        expansion = expand_sync(game, progress=job.progress)
        if expansion.failed:
            return ExportOutcome(job.instance.index,
                                 failure=f"expand: {expansion.reason or 'expansion failed'}")
        title = f"{job.spec.name}, instance {job.instance.index}"
        description = (f"gtsteer export of {Path(job.config).name}, seed {job.seed},"
                       f" model {model.model}, {job.spec.num_deals} deal(s)")
        return ExportOutcome(job.instance.index, to_efg(
            game, title=title, player_names=list(job.spec.players), description=description))
    except (StorageError, BudgetExceeded):
        raise
    except Exception as exc:  # noqa: BLE001 - one instance's failure is recorded, not fatal
        return ExportOutcome(job.instance.index, failure=f"{type(exc).__name__}: {exc}")


def _write(out: Path, done: ExportOutcome) -> ExportedGame:
    if done.export is None:
        return ExportedGame(index=done.index, status="failed", failure=done.failure)
    efg = Path("games") / f"{done.index}.efg"
    side = Path("games") / f"{done.index}.efg.json"
    write_text(out / efg, done.export.text)
    write_json(out / side, done.export.map)
    m = done.export.map
    return ExportedGame(
        index=done.index, status="exported", efg=str(efg), side_file=str(side),
        infosets=[sum(s.player == p for s in m.infosets) for p in range(len(m.players))],
        decision_nodes=m.decision_nodes, chance_nodes=m.chance_nodes, terminals=m.terminals,
        reduced_strategies=m.reduced_strategies,
    )
