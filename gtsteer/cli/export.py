"""`gtsteer export CONFIG --format efg`: the expanded games as Gambit files (docs/SOLVE.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from gtsteer.cli.common import console, final, friendly_errors, note, parse_options
from gtsteer.cli.options import (
    ConfigArg,
    Deals,
    Games,
    MaxCalls,
    Out,
    Quiet,
    Seed,
    Served,
    WriterLlm,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.solve import print_roles
from gtsteer.cli.spend import spending
from gtsteer.runs.export import SUMMARY_FILE, ExportOptions
from gtsteer.runs.export import run as run_export
from gtsteer.runs.solve import tree_bound


@overridable
@spending(budget=True)
def export(
    config: ConfigArg,
    fmt: Annotated[str, typer.Option("--format", "-f", help="efg (Gambit extensive form,"
                                     " also read by OpenSpiel's efg_game)")] = "efg",
    llm: WriterLlm = None,
    served: Served = Served(),
    games: Games = 1,
    seed: Seed = 0,
    deals: Deals = None,
    out: Out = None,
    max_calls: MaxCalls = None,
    quiet: Quiet = False,
) -> None:
    """Write each instance's game tree as DIR/games/<i>.efg plus a side file mapping its
    information sets to gtsteer's information states (0 model calls after a `solve` of the
    same config, model and seed)."""
    with friendly_errors():
        ctx = served.context(llm=llm, out=out, progress=not quiet, report=note)
        summary = run_export(config, ctx, parse_options(
            ExportOptions, {"fmt": "--format"}, fmt=fmt, games=games, seed=seed, deals=deals,
            max_calls=tree_bound(max_calls)))
    where = summary.folder
    for g in summary.games:
        if g.status == "failed":
            console.print(f"[yellow]instance {g.index} failed:[/] {escape(g.failure or '')}")
            continue
        console.print(f"instance {g.index}: {where / str(g.efg)} ({g.terminals} terminals,"
                      f" information sets {'/'.join(map(str, g.infosets))}) · side file"
                      f" {where / str(g.side_file)}", highlight=False)
    print_roles(summary.roles)
    final(f"summary: {where / SUMMARY_FILE}")
    if all(g.status == "failed" for g in summary.games):
        raise typer.Exit(code=1)
