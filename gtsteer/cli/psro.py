"""`gtsteer psro CONFIG`: PSRO over instructions; writes DIR/summary.json and DIR/payoffs.png."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from typer.core import TyperCommand

from gtsteer.binding import progress
from gtsteer.cli.common import console, final, friendly_errors, note, parse_options
from gtsteer.cli.options import (
    ConfigArg,
    Deals,
    Games,
    HeldoutRescore,
    InstancesFile,
    MaxCalls,
    Out,
    PsroIterations,
    Quiet,
    Scale,
    Seed,
    Served,
    WriterLlm,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.solve import print_roles
from gtsteer.cli.spend import spending
from gtsteer.runs.psro import PSROOptions, PSROSummary
from gtsteer.runs.psro import run as run_psro
from gtsteer.runs.solve import tree_bound
from gtsteer.solvers.meta import META_SOLVERS
from gtsteer.solvers.meta.registry import help_text
from gtsteer.solvers.psro import IterationReport, PSROConfig


def added_cell(added: list[str | None], rejected: list[str | None]) -> str:
    """Per player: the instruction added, the one the held-out gate rejected, or a dash."""
    rejected = rejected or [None] * len(added)
    return ", ".join(a or (f"rejected {r!r}" if r else "—")
                     for a, r in zip(added, rejected, strict=True))


def print_summary(summary: PSROSummary) -> None:
    """One row per iteration: what was added, each concept's welfare and PSRO gap, new calls
    (per-player payoffs and the meta-strategies are in summary.json)."""
    settings = summary.settings
    concepts = [c for c in META_SOLVERS if c in summary.iterations[0].solutions]
    table = Table("it", "added (per player)", *(f"{c.upper()} welfare (gap)" for c in concepts),
                  "new calls", title=f"{summary.domain}: PSRO, {settings.operator} oracle, "
                                     f"{settings.meta_solver} meta-strategy")
    for it in summary.iterations:
        added = added_cell(it.added, it.rejected) if it.added else ""
        cells = [f"{it.solutions[c].welfare:+.3f} ({it.solutions[c].gap:.3f})" for c in concepts]
        table.add_row(str(it.iteration), added, *cells, str(it.llm.new_calls))
    console.print(table)
    final = summary.iterations[-1].solutions[settings.meta_solver]
    for p, (pop, marg) in enumerate(zip(summary.final_populations, final.marginals,
                                        strict=True)):
        shown = ", ".join(f"{x} {marg[x]:.2f}" for x in pop)
        console.print(f"player {p} ({settings.meta_solver}, payoff {final.payoffs[p]:+.3f}): "
                      f"{shown}")
    last = summary.iterations[-1]
    gap_name = "NashConv" if final.gap_name == "nash_conv" else "CCE gap"
    console.print(f"{settings.meta_solver} meta-strategy's {gap_name} in the restricted game: "
                  f"{last.gap:.4g} " + (f"(converged needs <= {last.gap_limit:.4g})"
                                         if last.stop_rule == "gap"
                                         else "(not a stopping test: converged means no "
                                              "oracle found an improvement)"))
    console.print(f"converged: {summary.converged}"
                  + (f" · stopped: {summary.stop_reason}"
                     if summary.stop_reason not in (None, "converged") else ""))
    if summary.reference is not None:
        print_reference(summary)


def print_reference(summary: PSROSummary) -> None:
    """Per iteration: the driver's meta-strategy in the full game (`--reference`)."""

    def cell(x: float | None, fmt: str = "+.3f") -> str:
        return "—" if x is None else format(x, fmt)

    table = Table("it", "NashConv", "gain over any", "CFR's gain", "share", "best gain",
                  "share", "fresh gain", "fresh share of best",
                  title=f"the {summary.settings.meta_solver} meta-strategy in {summary.reference}"
                        " (mean over instances)")
    for it in summary.iterations:
        r = it.reference
        if r is None:
            continue
        if r.unmapped:
            table.add_row(str(it.iteration), f"plays {', '.join(r.unmapped)}: not in the game",
                          *[""] * 7)
            continue
        table.add_row(str(it.iteration), cell(r.nash_conv, ".3f"), cell(r.gain), cell(r.cfr_gain),
                      cell(r.cfr_share, ".0%"), cell(r.best_gain), cell(r.best_share, ".0%"),
                      cell(r.fresh_gain), cell(r.fresh_best_share, ".0%"))
    console.print(table)


# long: a typer command; its parameter list (two thirds of it) is the command's flags, and the
# body only parses them into the run context and options, calls the driver and prints.
@overridable
@spending(budget=True)
def psro(
    config: ConfigArg,
    llm: WriterLlm = None,
    proposer_llm: Annotated[
        str | None, typer.Option("--proposer-llm", help="Model that proposes instructions "
                                 "(default: the config's models.proposer, else --llm).")
    ] = None,
    served: Served = Served(),
    games: Games = 1,
    iterations: PsroIterations = 3,
    candidates: Annotated[
        int, typer.Option("--candidates", "-k", help="Candidates per oracle (K).")
    ] = 4,
    operator: Annotated[
        str, typer.Option("--operator", help="shotgun (default: one call for K candidates) | "
                                             "better | trajectory | categorical")
    ] = "shotgun",
    meta_solver: Annotated[
        str, typer.Option("--meta-solver", help="(from META_SOLVERS when the command is built)")
    ] = "rd",
    gap_tolerance: Annotated[
        float, typer.Option("--gap-tolerance",
                            help="Converged needs the driver's restricted-game gap <= this x "
                                 "the meta-game's payoff span.")
    ] = 1e-3,
    heldout: HeldoutRescore = False,
    heldout_gate: Annotated[
        bool, typer.Option("--heldout-gate", help="With --heldout: adopt only instructions that "
                                                  "also win on fresh samples.")
    ] = False,
    report_nash: Annotated[
        bool, typer.Option("--report-nash", help="Also solve and report the exact Nash (2 "
                                                 "players) when another concept drives.")
    ] = False,
    support_tolerance: Annotated[
        float, typer.Option("--support-tolerance",
                            help="Score candidates only against opponent instructions played "
                                 "with more than this probability (0: against all).")
    ] = 1e-4,
    oracle_player: Annotated[
        list[int] | None,
        typer.Option("--oracle-player", help="Grow only this player's instructions "
                                             "(repeatable; default: every player)."),
    ] = None,
    deals: Deals = None,
    seed: Seed = 0,
    out: Out = None,
    max_calls: MaxCalls = None,
    export_nfg: Annotated[
        bool, typer.Option("--export-nfg", help="Also write each iteration's meta-game as"
                           " iterations/<t>.nfg (Gambit's normal form).")
    ] = False,
    quiet: Quiet = False,
    scale: Scale = Scale(),
    instances: InstancesFile = None,
    reference: Annotated[
        Path | None,
        typer.Option("--reference", help="A config of the same domain with the full action set:"
                     " each iteration's meta-strategy is also measured there (NashConv, gain"
                     " over any beside the full game's; with --heldout on fresh samples)."),
    ] = None,
) -> None:
    """Grow each player's instruction set with LLM-proposed best responses (PSRO)."""
    on_ray = scale.options()
    if instances is not None and games != 1:
        raise typer.BadParameter("give --games or --instances, not both", param_hint="--instances")
    with friendly_errors():
        # PSROConfig validates the options (its error names the flag) before any LLM call.
        settings = parse_options(
            PSROConfig, {"oracle_players": "--oracle-player"}, iterations=iterations,
            candidates=candidates, operator=operator, meta_solver=meta_solver, seed=seed,
            support_tolerance=support_tolerance, oracle_players=oracle_player,
            gap_tolerance=gap_tolerance, heldout=heldout, heldout_gate=heldout_gate,
            report_nash=report_nash)

        def done(report: IterationReport) -> None:
            added = added_cell(report.added, report.rejected) or "final meta-game"
            console.print(f"iteration {report.iteration}: {added} "
                          f"({report.llm.new_calls} new calls, {report.wall_s:.1f} s)")

        ctx = served.context(llm=llm, proposer=proposer_llm, out=out, ray=on_ray,
                             progress=not quiet, report=note, on_phase=progress.phase,
                             on_step=done)
        summary = run_psro(config, ctx, parse_options(
            PSROOptions, {"instances_file": "--instances"}, settings=settings, games=games,
            deals=deals, max_calls=tree_bound(max_calls), export_nfg=export_nfg,
            instances_file=instances, reference=reference))
    print_summary(summary)
    print_roles(summary.roles)
    where = summary.folder
    final(f"summary: {where / 'summary.json'} · plot: {where / summary.plot}")


class PsroCommand(TyperCommand):
    """`psro`, its `--meta-solver` help read from the registry as the command is built (so a
    meta-solver registered after this module was imported is listed too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.name == "meta_solver":
                param.help = help_text()  # type: ignore[attr-defined]
