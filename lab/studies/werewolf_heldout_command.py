"""`python -m lab werewolf-heldout`: a steering policy's gain on fresh samples of held-out
states, in its own playstyle game (docs/WEREWOLF_STEERING.md, "Fresh samples"). A study of the
product's `werewolf steer-train` policies, not a product command: it was `gtsteer werewolf
steer-heldout` and keeps its flags (typer's, as the product's), its outputs and, with `--doc`,
its section of a doc (`lab.studies.werewolf_fresh_doc`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from gtsteer.cli.common import console, friendly_errors
from gtsteer.cli.options import (
    ApiBase,
    ApiKeyEnv,
    ApiMode,
    MaxWait,
    OutFolder,
    RequestTimeout,
    Served,
)
from gtsteer.cli.spend import spending
from gtsteer.runs.context import RunContext
from gtsteer.werewolf.rules import MAX_SEED, MIN_SEED
from lab.bench import benchdoc
from lab.studies.werewolf_sections import SectionDoc

if TYPE_CHECKING:  # the run module is imported when the command runs
    from lab.studies.werewolf_heldout import SteerHeldoutSummary

COMMAND = "python -m lab werewolf-heldout"

#: The model the measured policy was trained with, unless given.
TrainedLlm = Annotated[
    str | None, typer.Option("--llm", "-m", help="Model (default: the training run's).")
]
HeldoutSeed = Annotated[
    int | None,
    typer.Option("--seed", min=MIN_SEED, max=MAX_SEED,
                 help="Seed of the first held-out game (game g: seed + g); default: the first"
                 " after the training games'. Training seeds are refused."),
]
#: Held-out states to solve and measure.
HeldoutStates = Annotated[
    int, typer.Option("--states", min=1, help="Held-out discussion states to measure.")
]
#: A steer-train run folder.
SteerTrainedPolicy = Annotated[
    str | None, typer.Option("--policy", help="The --out folder of a `werewolf steer-train`"
                             " run (its policy/, steer_train.json, states.jsonl,"
                             " records.jsonl); required unless --render-only.")
]
StatesResume = Annotated[
    bool,
    typer.Option("--resume", help="Keep the states and rows an earlier run with the same"
                 " settings and policy saved in --out (rows/<i>.json); measure only the rest."),
]


@spending(budget=True)
def steer_heldout(
    *,
    out: OutFolder,
    policy: SteerTrainedPolicy = None,
    states: HeldoutStates = 40,
    per_game: Annotated[
        int, typer.Option("--per-game", min=1, help="At most this many states of one"
                          " held-out game (its turns share the game's chat).")
    ] = 4,
    seed: HeldoutSeed = None,
    max_games: Annotated[
        int | None, typer.Option("--max-games", min=1, help="Held-out games to play at most"
                                 " (default: 4 x what --states / --per-game needs, + 4).")
    ] = None,
    llm: TrainedLlm = None,
    resume: StatesResume = False,
    doc: SectionDoc = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    request_timeout: RequestTimeout = None,
    max_wait: MaxWait = None,
    api_mode: ApiMode = None,
) -> None:
    """Held-out states from games the policy never trained on: each one's playstyle game is
    solved with CFR+, built again with fresh message samples, and the first speaker's CFR and
    distilled policies are compared on those samples with `unsteered` and uniform playstyles,
    paired per state, with 95% t and bootstrap intervals."""
    from lab.studies.werewolf_heldout import SteerHeldoutConfig, SteerHeldoutOptions, run

    with friendly_errors():
        if policy is None:
            raise typer.BadParameter("give the steer-train folder to measure",
                                     param_hint="--policy")
        cfg = SteerHeldoutConfig(policy=policy, states=states, per_game=per_game, seed=seed,
                                 max_games=max_games, llm=llm)
        served = Served(api_base, api_key_env, request_timeout, max_wait, api_mode).endpoint()
        ctx = RunContext.of(endpoint=served, out=out)
        summary = run(cfg, ctx, SteerHeldoutOptions(resume=resume, command=command_line(
            policy, out, states, per_game, seed, max_games, llm)))
        console.print(stats_table(summary))
        calls = summary.model_calls
        console.print(f"model requests: {calls.requests} ({calls.cache_hits} from the cache, "
                      f"{calls.new_calls} new); rows in {summary.folder}/rows")
        if summary.shortfall:
            console.print(f"[yellow]note:[/yellow] {summary.shortfall}")
        if doc:
            from lab.studies.werewolf_fresh_doc import write_doc
            from lab.studies.werewolf_heldout import read_rows

            write_doc(Path(doc), summary, read_rows(summary.folder, summary.run_key))
            console.print(f"wrote the werewolf_fresh section of {doc}")


def command_line(policy: str, out: str, states: int, per_game: int, seed: int | None,
                 max_games: int | None, llm: str | None) -> str:
    """The command as the doc quotes it: the given settings, defaults left out."""
    parts = ["python -m lab werewolf-heldout", f"--policy {policy}", f"--states {states}"]
    parts += [f"--per-game {per_game}"] if per_game != 4 else []
    parts += [f"--seed {seed}"] if seed is not None else []
    parts += [f"--max-games {max_games}"] if max_games is not None else []
    parts += [f"--llm {llm}"] if llm is not None else []
    return " ".join([*parts, f"--out {out}"])


def stats_table(summary: SteerHeldoutSummary) -> Table:
    """All rows' gains: each policy against each baseline, fresh and in-sample."""
    table = Table("policy", "samples", "baseline", "n", "gain [95% t]", "bootstrap [95%]",
                  title="first speaker's gain, paired per held-out state")
    for s in summary.stats:
        if s.team != "all":
            continue
        g = s.gain
        t = (f"{g.mean:+.3f}" if g.ci_low is None or g.ci_high is None
             else f"{g.mean:+.3f} [{g.ci_low:+.3f}, {g.ci_high:+.3f}]")
        boot = "-" if s.bootstrap is None else f"[{s.bootstrap[0]:+.3f}, {s.bootstrap[1]:+.3f}]"
        table.add_row(s.policy, s.samples, s.baseline, str(g.n), t, boot)
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """Run it with `argv` (typer's flags, as `gtsteer werewolf steer-heldout` had them)."""
    return benchdoc.typer_main(COMMAND, steer_heldout, argv)
