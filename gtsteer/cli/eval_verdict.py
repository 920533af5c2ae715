"""`gtsteer eval verdict CONFIG`: naive vs strategic questioner, over judge prompts and
temperatures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gtsteer.cli.common import console, final, friendly_errors, parse_options
from gtsteer.cli.options import Llm, Out, Quiet, Scale, Seed, Served, VerdictGames
from gtsteer.cli.spend import spending
from gtsteer.runs import eval_verdict
from gtsteer.runs.eval_verdict import (
    DEFAULT_BREADTH,
    DEFAULT_DEPTH,
    VerdictEvalReport,
    VerdictOptions,
)
from gtsteer.solvers.metrics import Proportion


def _rate(win: Proportion) -> str:
    return f"{win.accuracy:.0%} [{win.ci_low:.0%}, {win.ci_high:.0%}] ({win.correct}/{win.n})"


def print_report(report: VerdictEvalReport) -> None:
    names = list(report.totals)
    table = Table("judge prompt", "T", *names, "difference",
                  title=f"{report.domain}: {report.questioner} win rate, 95% Wilson CI")
    settings = sorted({(c.prompt_index, c.temperature) for c in report.cells})
    for p, t in settings:
        cells = {c.policy: c for c in report.cells if (c.prompt_index, c.temperature) == (p, t)}
        diff = cells[names[-1]].win.accuracy - cells[names[0]].win.accuracy
        table.add_row(str(p), f"{t:g}", *(_rate(cells[n].win) for n in names), f"{diff:+.0%}")
    totals = list(report.totals.values())
    table.add_row(
        "all", "", *(_rate(w) for w in totals), f"{totals[-1].accuracy - totals[0].accuracy:+.0%}"
    )
    console.print(table)
    console.print(
        f"target verdict: {report.target_verdict} · strategic breadth {report.breadth}, depth"
        f" {report.depth}"
    )


@spending(budget=True)
def verdict(
    config: Annotated[
        Path, typer.Argument(help="A verdict-game config (court, interrogation...).")
    ],
    games: VerdictGames = 20,
    llm: Llm = "local",
    served: Served = Served(),
    out: Out = None,
    seed: Seed = 0,
    temperatures: Annotated[
        str, typer.Option("--temperatures", help="Judge temperatures, comma-separated.")
    ] = "0,1",
    breadth: Annotated[
        int, typer.Option("--breadth", help="Strategic candidates per question.")
    ] = DEFAULT_BREADTH,
    depth: Annotated[
        int, typer.Option("--depth", help="Strategic look-ahead rounds.")
    ] = DEFAULT_DEPTH,
    quiet: Quiet = False,
    scale: Scale = Scale(),
) -> None:
    """Win rate of a naive and a strategic questioner, per judge prompt and temperature."""
    on_ray = scale.options()
    with friendly_errors():
        try:
            temps = [float(t) for t in temperatures.split(",") if t.strip()]
        except ValueError:
            raise ValueError(f"--temperatures: expected numbers, got {temperatures!r}") from None
        ctx = served.context(llm=llm, out=out, ray=on_ray, progress=not quiet)
        options = parse_options(VerdictOptions, games=games, seed=seed,
                                temperatures=temps, breadth=breadth, depth=depth)
        report = eval_verdict.run(config, ctx, options)
    print_report(report)
    where = report.folder
    final(f"report: {where / 'report.json'} · chart: {where / 'verdict.png'}")
