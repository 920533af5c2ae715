"""`gtsteer bench NAME`, `gtsteer study NAME` and `gtsteer table1`: the benchmarks and studies
that write numbers into docs (gtsteer/bench/, gtsteer/studies/; docs/BENCHMARKS.md).

Each keeps its own argparse flags (its one prelude is `gtsteer.bench.benchdoc.parser`): every
argument after NAME is handed to it untouched, so `gtsteer bench llm --help` prints that
benchmark's flags, and a command line written into docs/BENCHMARKS.md runs again as it reads.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Annotated

import typer

#: `gtsteer bench NAME` -> the module whose `main(argv)` it runs.
BENCHES = {
    "abba": "gtsteer.bench.bench_abba",
    "compare-served": "gtsteer.bench.compare_served",
    "demo": "gtsteer.bench.bench_demo",
    "imitation": "gtsteer.bench.bench_imitation",
    "llama-tools": "gtsteer.bench.llama_tools",
    "llm": "gtsteer.bench.bench_llm",
    "prefill": "gtsteer.bench.bench_prefill",
    "prefix": "gtsteer.bench.bench_prefix",
    "profile": "gtsteer.bench.bench_profile",
    "psro": "gtsteer.bench.bench_psro",
    "ray": "gtsteer.bench.bench_ray",
    "reward": "gtsteer.bench.bench_reward",
    "served": "gtsteer.bench.bench_served",
    "solve": "gtsteer.bench.bench_solve",
    "steering": "gtsteer.bench.bench_steering",
    "steering-werewolf": "gtsteer.bench.bench_steering_werewolf",
    "web": "gtsteer.bench.bench_web",
    "werewolf": "gtsteer.bench.bench_werewolf",
    "werewolf-lines": "gtsteer.bench.werewolf_lines",
}
#: `gtsteer study NAME` -> its module (`gtsteer table1` runs gtsteer.studies.table1).
STUDIES = {
    "demo-outcomes": "gtsteer.studies.demo_outcomes",
    "gambit-check": "gtsteer.studies.gambit_check",
    "playthroughs": "gtsteer.studies.playthroughs",
    "psro-discovery": "gtsteer.studies.psro_discovery",
    "samples": "gtsteer.studies.samples_study",
    "steering-table": "gtsteer.studies.steering_table",
    "tension": "gtsteer.studies.tension",
    "verdict": "gtsteer.studies.study_verdict",
    "web-screenshots": "gtsteer.studies.web_screenshots",
}
TABLE1 = "gtsteer.studies.table1"

#: Everything after NAME goes to the module's own parser, `--help` included.
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True,
                "allow_interspersed_args": False}


def run_module(module: str, argv: list[str]) -> None:
    """`module.main(argv)`; a non-zero int it returns is the exit code. A main that takes
    `run_cli` (bench_prefix times the README job in-process) is handed this command line.
    Expected failures (a bad config, an unreadable input, an unwritable doc) are one line and
    exit 2, as for every other command (`friendly_errors`)."""
    from gtsteer.cli.common import friendly_errors

    main = importlib.import_module(module).main
    with friendly_errors():
        if "run_cli" in inspect.signature(main).parameters:
            from gtsteer.cli import app

            code = main(argv, run_cli=lambda args: app(args=args, standalone_mode=False))
        else:
            code = main(argv)
    if isinstance(code, int) and code != 0:
        raise typer.Exit(code)


def _pick(table: dict[str, str], kind: str, name: str) -> str:
    if name not in table:
        raise typer.BadParameter(f"no {kind} {name!r}; one of: {', '.join(table)}",
                                 param_hint="NAME")
    return table[name]


def bench(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME",
                                        help="One of: " + ", ".join(BENCHES) + ".")],
) -> None:
    """Run a benchmark (its flags: `gtsteer bench NAME --help`); most rewrite their own
    section of docs/BENCHMARKS.md."""
    run_module(_pick(BENCHES, "benchmark", name), list(ctx.args))


def study(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME",
                                        help="One of: " + ", ".join(STUDIES) + ".")],
) -> None:
    """Run a study or a doc recorder (its flags: `gtsteer study NAME --help`)."""
    run_module(_pick(STUDIES, "study", name), list(ctx.args))


def table1(ctx: typer.Context) -> None:
    """The paper's Table 1 for every domain config, written to docs/TABLE1.md (its flags:
    `gtsteer table1 --help`; docs/how-to/run-table1.md)."""
    run_module(TABLE1, list(ctx.args))


def register(app: typer.Typer) -> None:
    app.command("bench", context_settings=PASS_THROUGH)(bench)
    app.command("study", context_settings=PASS_THROUGH)(study)
    app.command("table1", context_settings=PASS_THROUGH, add_help_option=False)(table1)
