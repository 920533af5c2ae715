"""`gtsteer check CONFIG`: one report for a domain author, for a config anywhere.

Four parts, each the machinery another command uses, not a copy of it: conformance (the public
checks of `gtsteer.checks` on the fake model, the warning tier shown, not failed), one fake-model
playthrough (the instructions chosen, the messages, the payoffs), the worst-case tree size
(the line `solve` prints) and a dry run of `solve` on one instance with the configured or given
model (`gtsteer.cli.spend.dry_run`: nothing is sent). Exit 0 when conformance passes, 1 when a
check fails, 2 for bad input. `--record FILE` also writes the config's playthrough file (the
one the repository keeps for each shipped config), which `gtsteer.checks.replay` replays.
"""

from __future__ import annotations

import os
import random
import warnings
from pathlib import Path
from typing import Annotated

import typer

from gtsteer.binding import make_game, make_instance
from gtsteer.binding.game import DialogueGame
from gtsteer.binding.shipped import resolve_config
from gtsteer.checks import (
    CheckWarning,
    ConformanceError,
    check_spec,
    determinism_check,
    dialogue_playthrough,
    reduced_spec,
)
from gtsteer.cli.common import friendly_errors, grouped
from gtsteer.cli.options import ConfigArg, Served, WriterLlm
from gtsteer.cli.overrides import overridable
from gtsteer.cli.spend import dry_run
from gtsteer.domains import load_game, load_spec
from gtsteer.llm.rate import RateLimit
from gtsteer.runs.atomic import write_text
from gtsteer.runs.context import RunContext
from gtsteer.runs.solve import SolveOptions, check_tree_size
from gtsteer.runs.solve import run as run_solve

#: The variable that names the config to `checked_game` in the determinism check's processes.
CONFIG_ENV = "GTSTEER_CHECK_CONFIG"
#: Characters of a message shown in the playthrough.
SHOWN = 100


def checked_game() -> DialogueGame:
    """The game the check walks (the config of `CONFIG_ENV`, reduced as `check_spec` reduces
    it, instance 0, the fake model): the factory `determinism_check` builds in fresh processes."""
    return checked_game_of(Path(os.environ[CONFIG_ENV]))


def checked_game_of(config: Path) -> DialogueGame:
    spec, _ = reduced_spec(load_spec(config))
    return make_game(spec, make_instance(spec, 0), "fake")


def conformance(config: Path) -> list[str]:
    """The report's lines; `ConformanceError` naming the check that failed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckWarning)  # shown below, from the report
        report = check_spec(load_spec(config), str(config), "fake")
    os.environ[CONFIG_ENV] = str(resolve_config(config).resolve())  # a shipped name too
    try:
        determinism_check(f"{__name__}:checked_game", str(config))
    finally:
        del os.environ[CONFIG_ENV]
    lines = [f"conformance: passed (pyspiel API, isolation, determinism) on"
             f" {report.histories:,} histories, {report.info_states:,} information states,"
             f" NashConv {report.nash_conv:.3g} ({report.cfr_backend})"]
    if report.reduced:
        lines.append("  checked a smaller variant: " + "; ".join(report.reduced))
    lines += [f"  warning: {w}" for w in report.warnings]
    return lines


def walkthrough(config: Path, seed: int = 0) -> list[str]:
    """One path through the game on the fake model: each instruction, the messages, payoffs."""
    game = checked_game_of(config)
    roles, rng = game.spec.players, random.Random(seed)
    state, lines = game.new_initial_state(), ["playthrough (fake model, instance 0):"]
    while not state.is_terminal():
        if state.is_chance_node():
            action = rng.choices(*zip(*state.chance_outcomes(), strict=True))[0]
        else:
            player = state.current_player()
            action = rng.choice(state.legal_actions())
            lines.append(f"  player {player} ({roles[player]}) is told:"
                         f" {state.action_to_string(player, action)}")
        state.apply_action(action)
    transcript = str(state).split("\n", 1)[1] if "\n" in str(state) else ""
    lines += [f"  | {ln[:SHOWN]}{'...' if len(ln) > SHOWN else ''}"
              for ln in transcript.splitlines() if ln.strip()]
    lines.append(f"  payoffs: {[round(r, 4) for r in state.returns()]}")
    return lines


@overridable
@grouped
def check(
    config: ConfigArg,
    llm: WriterLlm = None,
    served: Served = Served(),
    record: Annotated[Path | None, typer.Option(
        "--record", help="also write the playthrough file of instance 0 (fake model) here",
        dir_okay=False)] = None,
) -> None:
    """Check a domain config: conformance, a fake-model playthrough, the tree size and what
    solving one instance would cost (nothing is sent). Exit 1 when a check fails."""
    with friendly_errors():
        spec = load_spec(config)  # a bad config is bad input: one line, exit 2
        endpoint = served.endpoint()
    typer.echo(f"check of {config} ({spec.name})")
    try:
        lines = conformance(config)
    except ConformanceError as exc:
        typer.echo(f"conformance: FAILED: {exc}")
        raise typer.Exit(code=1) from None
    for line in lines:
        typer.echo(line)
    with friendly_errors():
        for line in walkthrough(config):
            typer.echo(line)
        check_tree_size(spec, 1, None, report=typer.echo)
        if record is not None:  # the config as configured, not the reduced variant checked
            record.parent.mkdir(parents=True, exist_ok=True)
            write_text(record, dialogue_playthrough(load_game(config, "fake"), str(config)))
            typer.echo(f"playthrough recorded: {record} (replay: gtsteer.checks.replay)")

    def solve_once(out: Path | None = None, quiet: bool = True) -> None:
        ctx = RunContext.of(llm=llm, endpoint=endpoint, out=out, progress=not quiet,
                            report=lambda _: None)
        run_solve(config, ctx, SolveOptions(games=1))

    with friendly_errors():
        dry_run("solve (1 instance)", solve_once, (), {"out": None, "quiet": True}, RateLimit())
