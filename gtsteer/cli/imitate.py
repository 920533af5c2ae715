"""`gtsteer imitate CONFIG`: distil the CFR policy into an MLP over text embeddings, evaluate it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gtsteer.cli.common import console, final, friendly_errors, interval, parse_options, signed
from gtsteer.cli.options import (
    ConfigArg,
    DealsMin1,
    Embedder,
    Games,
    Iterations,
    Llm,
    MaxCalls,
    Out,
    Quiet,
    Seed,
    Served,
    Solver,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.spend import spending
from gtsteer.runs.imitate import (
    DEFAULT_GAMES,
    FEATURE_MODES,
    REPORT_FILE,
    ImitateOptions,
    ImitationReport,
)
from gtsteer.runs.imitate import run as run_imitate
from gtsteer.runs.solve import DEFAULT_ITERATIONS, DEFAULT_SOLVER, tree_bound


def _pos(x: float | None, digits: int = 3) -> str:
    """Unsigned: probabilities, entropies, divergences, NashConv."""
    return "—" if x is None else f"{round(x, digits) + 0.0:.{digits}f}"


def print_report(report: ImitationReport, out: Path) -> None:
    """Fit, held-out evaluation, meta-game and (optionally) the feature comparison."""
    fit = Table("set", "records", "cross-entropy", "KL", "top-1", "KL (all states)",
                title=f"{report.domain}: fit to the CFR policy ({report.features} features, "
                      f"{report.embedder})")
    training = report.training
    for name, f in (("train", training.train), ("held-out", training.heldout)):
        if f is not None:
            fit.add_row(name, str(f.records), _pos(f.cross_entropy), _pos(f.kl), _pos(f.top1),
                        _pos(f.kl_uniform))
    console.print(fit)
    h = report.heldout
    table = Table("metric (held-out instances)", "mean", "95% CI", "n",
                  title="distilled policy (DIM) in the game")
    rows = [
        ("NashConv of DIM", h.nash_conv),
        ("NashConv of CFR", h.nash_conv_cfr),
        ("DIM gain over any", h.dim_gain),
        ("CFR gain over any", h.cfr_gain),
        ("value DIM vs any", h.value_dim_vs_any),
        ("value DIM vs CFR", h.value_dim_vs_cfr),
        ("P(DIM) in DIM-vs-LLM equilibrium", h.dim_probability),
    ]
    for name, m in rows:
        table.add_row(name, signed(m.mean), interval(m), str(m.n))
    console.print(table)
    console.print(
        f"meta-game of the mean payoffs: P(DIM) = {h.pooled_metagame.dim_probability:.3f} "
        "(paper: 0.76 fruit trading, 0.44 meeting scheduling)"
    )
    if report.feature_comparison:
        cmp = Table("features", "held-out KL", "top-1", "NashConv of DIM", "P(DIM)",
                    title="does structure help? (same split, same seed)")
        for v in report.feature_comparison:
            cmp.add_row(v.features, _pos(v.heldout_fit.kl), _pos(v.heldout_fit.top1),
                        _pos(v.heldout.nash_conv.mean), _pos(v.heldout.dim_probability.mean))
        console.print(cmp)
    console.print(
        f"solve results {'reused' if report.solve_reused else 'made'} in"
        f" {report.solve_dir} · training {training.seconds:.1f} s"
    )
    for failure in report.failures:
        console.print(
            f"[yellow]instance {failure.instance} failed ({failure.stage}):[/] "
            f"{escape(failure.reason)}"
        )
    final(f"report: {out / REPORT_FILE} · model: {out / report.model_dir}")


@overridable
@spending(budget=True)
def imitate(
    config: ConfigArg,
    llm: Llm = "local",
    served: Served = Served(),
    games: Games = DEFAULT_GAMES,
    holdout: Annotated[
        float,
        typer.Option("--holdout", help="Held-out instances: a fraction < 1 or a count >= 1."),
    ] = 0.2,
    steps: Annotated[int, typer.Option("--steps", help="Adam steps (batch 128).")] = 10_000,
    embedder: Embedder = None,
    features: Annotated[
        str, typer.Option("--features", help="Network input: text | struct | both.")
    ] = "text",
    out: Out = None,
    seed: Seed = 0,
    solver: Solver = DEFAULT_SOLVER,
    iterations: Iterations = DEFAULT_ITERATIONS,
    deals: DealsMin1 = None,
    solve_dir: Annotated[
        Path | None,
        typer.Option("--solve-dir", help="Solve results to reuse or write (default: OUT/solve)."),
    ] = None,
    compare_features: Annotated[
        bool,
        typer.Option("--compare-features", help=f"Also train {'/'.join(FEATURE_MODES)} and "
                     "compare them on the held-out instances."),
    ] = False,
    max_calls: MaxCalls = None,
    quiet: Quiet = False,
) -> None:
    """Solve (or reuse) N instances, distil the CFR policy into an MLP, evaluate on held-out."""
    with friendly_errors():
        ctx = served.context(llm=llm, embedder=embedder, out=out, progress=not quiet)
        report = run_imitate(config, ctx, parse_options(
            ImitateOptions, games=games, holdout=holdout, steps=steps, features=features,
            seed=seed, solver=solver, iterations=iterations, deals=deals, solve_dir=solve_dir,
            compare_features=compare_features, max_calls=tree_bound(max_calls)))
    print_report(report, report.folder)
