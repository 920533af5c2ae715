"""`gtsteer export CONFIG --format efg`: the expanded games as Gambit files (docs/SOLVE.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gtsteer.cli.common import console, err_console, friendly_errors
from gtsteer.cli.options import ApiBase, ApiKeyEnv, MaxWait, RequestTimeout
from gtsteer.cli.solve import print_roles
from gtsteer.runs.export import SUMMARY_FILE, export_config
from gtsteer.runs.models import Endpoint
from gtsteer.runs.solve import DEFAULT_MAX_CALLS, SEED_RANGE


def export(
    config: Annotated[Path, typer.Argument(help="Domain config YAML (configs/*.yaml).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="efg (Gambit extensive form,"
                                     " also read by OpenSpiel's efg_game)")] = "efg",
    llm: Annotated[
        str | None, typer.Option("--llm", "-m", help="local | local:/x.gguf | fake | litellm id"
                                 " (default: the config's models.writer, else local)")
    ] = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    request_timeout: RequestTimeout = None,
    max_wait: MaxWait = None,
    games: Annotated[int, typer.Option("--games", "-n", help="Generated instances.")] = 1,
    seed: Annotated[int, typer.Option("--seed", "-s", min=SEED_RANGE[0], max=SEED_RANGE[1],
                                      help="Instance-generation seed.")] = 0,
    deals: Annotated[
        int | None,
        typer.Option("--deals", help="Deal private info by chance (as `gtsteer solve --deals`;"
                     " default: the config's num_deals)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Output dir (default: results/CONFIG-export-LLM-SEED)."),
    ] = None,
    max_calls: Annotated[
        int, typer.Option("--max-calls", help="Refuse an export whose worst-case trees need more"
                          " LLM requests than this.", min=1),
    ] = DEFAULT_MAX_CALLS,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Write each instance's game tree as DIR/games/<i>.efg plus a side file mapping its
    information sets to gtsteer's information states (0 model calls after a `solve` of the
    same config, model and seed)."""
    with friendly_errors():
        summary = export_config(
            config, llm=llm, endpoint=Endpoint(api_base, api_key_env, timeout_s=request_timeout,
                              max_wait_s=max_wait), games=games, seed=seed,
            out_dir=out, fmt=fmt, deals=deals, progress=not quiet, max_calls=max_calls,
            report=lambda line: err_console.print(line, highlight=False, soft_wrap=True),
        )
    where = summary.folder
    for g in summary.games:
        if g.status == "failed":
            console.print(f"[yellow]instance {g.index} failed:[/] {escape(g.failure or '')}")
            continue
        console.print(f"instance {g.index}: {where / str(g.efg)} ({g.terminals} terminals,"
                      f" information sets {'/'.join(map(str, g.infosets))}) · side file"
                      f" {where / str(g.side_file)}", highlight=False)
    print_roles(summary.roles)
    calls = summary.llm_calls
    console.print(f"LLM: {calls.requests} requests, {calls.cache_hits} cache hits,"
                  f" {calls.new_calls} new calls · summary: {where / SUMMARY_FILE}",
                  highlight=False)
    if all(g.status == "failed" for g in summary.games):
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add the `export` command to the top-level app."""
    app.command("export")(export)
