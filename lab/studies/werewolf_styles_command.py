"""`python -m lab werewolf-styles`: do the playstyles change what a bot says? Sample the bot's
line under each style and unsteered at logged discussion states, read each with a validated
judge, count words and named players (lab/studies/werewolf_styles.py). A study of the
product's playstyle hook, not a product command: it was `gtsteer werewolf styles` and keeps its
flags (typer's, as the product's) and its outputs; with `--doc` it also writes its writer
model's section of a doc (lab/studies/werewolf_styles_doc.py), and with `--results RUN_DIR` it
samples nothing and rewrites that section from a finished run's saved lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from gtsteer.cli.common import console, friendly_errors, note
from gtsteer.cli.options import (
    ApiBase,
    ApiKeyEnv,
    ApiMode,
    BotGames,
    GameSeed,
    Llm,
    MaxDays,
    MaxMessages,
    MaxWait,
    MessageSamples,
    OutFolder,
    Players,
    PlaystyleOptions,
    RequestTimeout,
    Served,
)
from gtsteer.cli.spend import spending
from gtsteer.cli.werewolf_steer import DISCUSSION_OPTIONS
from gtsteer.runs.context import RunContext
from lab.bench import benchdoc
from lab.studies.werewolf_sections import DOC, SectionDoc

if TYPE_CHECKING:  # the run module is imported when the command runs
    from lab.studies.werewolf_styles import StylesSummary

COMMAND = "python -m lab werewolf-styles"

#: The one judge of its lines.
StyleJudge = Annotated[
    str, typer.Option("--judge", help="Who reads each line's style: a model (calibrated"
                      " choice), pairwise:MODEL or embed; validated first on --labelled.")
]
#: The labelled lines its judge is validated on.
StyleLabelled = Annotated[
    str | None, typer.Option("--labelled", help="Labelled lines the judge is validated on"
                             " (default gtsteer/data/werewolf_style_labelled.yaml).")
]
#: The states its lines are sampled at.
StyleStates = Annotated[
    int, typer.Option("--states", help="Logged discussion states the lines are sampled at (the"
                      " issue asks 20).")
]
#: Which states are eligible (steer-train's, with the same value).
EligibleSpeakers = Annotated[
    int, typer.Option("--speakers", help="A state is eligible as a playstyle game with this"
                      " many next speakers (as steer-train's --speakers).")
]


@spending(budget=True)
def styles(
    llm: Llm = "local",
    judge: StyleJudge = "embed",
    states: StyleStates = 20,
    samples: MessageSamples = 1,
    style_list: PlaystyleOptions = DISCUSSION_OPTIONS,
    games: BotGames = 4,
    players: Players = 7,
    max_messages: MaxMessages = 4,
    max_days: MaxDays = 2,
    speakers: EligibleSpeakers = 2,
    seed: GameSeed = 0,
    states_from: Annotated[
        str | None, typer.Option("--states-from", help="A steer-train folder (or its"
                                 " states.jsonl): measure at its states, spoken by --llm.")
    ] = None,
    labelled: StyleLabelled = None,
    out: OutFolder = "results/werewolf-styles",
    doc: SectionDoc = None,
    results: Annotated[
        str | None, typer.Option("--results", help="Sample nothing: recompute the summary of"
                                 " this run folder from its saved lines and write its section"
                                 " of --doc (default docs/WEREWOLF_STEERING.md).")
    ] = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    request_timeout: RequestTimeout = None,
    max_wait: MaxWait = None,
    api_mode: ApiMode = None,
) -> None:
    """Do the playstyles change what a bot says? Sample the bot's line under each style and
    unsteered at logged discussion states, read each with a validated judge, and count words and
    named players; each style against unsteered, paired by state. A rerun keeps finished rows."""
    from lab.studies.werewolf_styles import (
        DEFAULT_LABELLED,
        StylesConfig,
        StylesOptions,
        render_only,
        run,
    )
    from lab.studies.werewolf_styles_doc import document

    with friendly_errors():
        if results is not None:  # a section from a finished run, no model
            summary = render_only(Path(results), note)
            print_styles(summary)
            console.print(f"wrote its section of {document(summary, summary.folder, doc or DOC)}")
            return
        cfg = StylesConfig(
            llm=llm, judge=judge, states=states, samples=samples,
            styles=[s.strip() for s in style_list.split(",") if s.strip()], games=games,
            players=players, max_messages=max_messages, max_days=max_days,
            max_speakers=speakers, seed=seed, states_from=states_from)
        served = Served(api_base, api_key_env, request_timeout, max_wait, api_mode).endpoint()
        ctx = RunContext.of(endpoint=served, out=out, report=note)
        summary = run(cfg, ctx, StylesOptions(labelled=labelled or DEFAULT_LABELLED))
        print_styles(summary)
        if doc:
            console.print(f"wrote its section of {document(summary, summary.folder, doc)}")


def print_styles(summary: StylesSummary) -> None:
    """The run's table, its judge's validations, what moved and what it wrote (a section
    rendered with --results prints the same)."""
    console.print(styles_table(summary))
    for v in summary.validations:
        console.print(v.describe() + ("" if v.passes else " [red](not counted)[/red]"))
    console.print(f"moved: {'; '.join(summary.moved) or 'nothing'}")
    calls = summary.llm_calls
    console.print(f"model requests: {calls.requests} ({calls.cache_hits} from the cache, "
                  f"{calls.new_calls} new)")
    where = summary.folder
    console.print(f"wrote {where}/styles.json and {where}/lines.jsonl")


def styles_table(summary: StylesSummary) -> Table:
    """Each style against unsteered: words, named players, and the judge's readings."""
    table = Table("style", "lines", "words (vs unsteered)", "names a player (vs unsteered)",
                  *(f"read as its style, {v}" for v in summary.validated),
                  title=f"writer {summary.config.llm}, judge {summary.judge}")
    u = summary.unsteered
    table.add_row("unsteered", str(u.lines), f"{u.words.mean:.1f}", f"{u.names.accuracy:.2f}",
                  *(f"base {u.reads[v].get('neutral', 0.0):.2f} neutral"
                    for v in summary.validated))
    for r in summary.styles:
        judged = {m.variant: m for m in r.judge}
        table.add_row(
            r.style, str(r.lines), f"{r.words.mean:.1f} ({r.words_paired.diff.mean:+.1f})",
            f"{r.names.accuracy:.2f} ({r.names_paired.diff.mean:+.2f})",
            *(f"{judged[v].own.accuracy:.2f} (base {judged[v].base.accuracy:.2f})"
              for v in summary.validated))
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """Run it with `argv` (typer's flags, as `gtsteer werewolf styles` had them)."""
    return benchdoc.typer_main(COMMAND, styles, argv)
