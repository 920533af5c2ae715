"""`gtsteer werewolf steer-train|evaluate`: build a steering policy and measure it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from gtsteer.cli.common import console, friendly_errors
from gtsteer.cli.options import (
    BotGames,
    Embedder,
    GameSeed,
    Llm,
    MaxDays,
    MaxMessages,
    MessageSamples,
    OutFolder,
    Players,
    PlaystyleIterations,
    PlaystyleOptions,
    PlaystyleSpeakers,
    PlaystyleStates,
    Scale,
    SeedsResume,
    Served,
    Steer,
)
from gtsteer.cli.spend import spending
from gtsteer.werewolf.playstyles import options_for

#: `--styles` by default: every option of a discussion decision.
DISCUSSION_OPTIONS = ",".join(options_for("speak"))

if TYPE_CHECKING:  # the run module is imported when a command runs
    from gtsteer.evals.paired import PairedDifference
    from gtsteer.runs.werewolf_evaluate import EvaluateConfig


@spending(budget=True)
def steer_train(
    games: BotGames = 4,
    llm: Llm = "local",
    *,  # keyword-only from here: the required --out follows options with defaults
    out: OutFolder,
    states: PlaystyleStates = 20,
    samples: MessageSamples = 1,
    speakers: PlaystyleSpeakers = 2,
    styles: PlaystyleOptions = DISCUSSION_OPTIONS,
    iterations: PlaystyleIterations = 200,
    players: Players = 7,
    max_messages: MaxMessages = 4,
    max_days: MaxDays = 2,
    embedder: Embedder = None,
    train_steps: Annotated[int, typer.Option("--train-steps", help="MLP training steps.")] = 2000,
    seed: GameSeed = 0,
    served: Served = Served(),
    scale: Scale = Scale(),
) -> None:
    """Log bot-only games, solve playstyle games at sampled discussion turns with CFR+, and
    distill the solutions into a policy for `play --steer OUT`. With --ray, each logged game
    and each playstyle game is a Ray task; the training runs here."""
    from gtsteer.runs.werewolf_steer import SteerTrainConfig, SteerTrainOptions, run

    on_ray = scale.options()
    with friendly_errors():
        cfg = SteerTrainConfig(
            games=games, llm=llm, states=states, num_llm_seeds=samples, max_speakers=speakers,
            styles=[s.strip() for s in styles.split(",") if s.strip()], iterations=iterations,
            players=players, max_messages=max_messages, max_days=max_days, embedder=embedder,
            train_steps=train_steps, seed=seed)
        ctx = served.context(out=out, ray=on_ray)
        summary = run(cfg, ctx, SteerTrainOptions())
        calls = summary.model_calls
        console.print(f"solved {len(summary.solved)} playstyle games "
                      f"({summary.llm_calls} LLM calls), {summary.records} records; "
                      f"policy in {summary.folder}/policy")
        console.print(f"model requests: {calls.requests} ({calls.cache_hits} from the cache, "
                      f"{calls.new_calls} new)")
        if summary.shortfall:
            console.print(f"[yellow]note:[/yellow] {summary.shortfall}")


@spending(budget=True)
def evaluate(
    games: BotGames = 10,
    *,
    steer: Steer = None,
    llm: Llm = "local",
    out: OutFolder = "results/werewolf-evaluate",
    players: Players = 7,
    max_messages: MaxMessages = 4,
    max_days: MaxDays = 4,
    seed: GameSeed = 0,
    served: Served = Served(),
    scale: Scale = Scale(),
    conditions: Annotated[
        str,
        typer.Option("--conditions", help="Comma-separated conditions to play, each on the same"
                     " seeds: static, village-uniform, wolves-uniform, village-steered,"
                     " wolves-steered, both-steered (default: all). With static, each other is"
                     " also compared with it seed by seed."),
    ] = "",
    resume: SeedsResume = False,
) -> None:
    """Steered teams against static and uniformly random playstyles on the same seeds. With
    --ray, each seed's games are a Ray task."""
    from gtsteer.runs.werewolf_evaluate import CONDITION_KEYS, EvaluateConfig, EvaluateOptions, run

    on_ray = scale.options()
    chosen = [c.strip() for c in conditions.split(",") if c.strip()] or list(CONDITION_KEYS)
    with friendly_errors():
        if steer is None:
            raise typer.BadParameter("give the steer-train folder whose policy steers",
                                     param_hint="--steer")
        cfg = EvaluateConfig(games=games, llm=llm, players=players, max_messages=max_messages,
                             max_days=max_days, seed=seed, conditions=chosen)
        ctx = served.context(out=out, ray=on_ray)
        command = evaluate_command(cfg, steer, out, scale.ray, scale.workers, resume,
                                   conditions)
        summary = run(cfg, ctx, EvaluateOptions(steer=steer, resume=resume, command=command))
        table = Table("condition", "village wins [95% CI]", "wolf wins [95% CI]",
                      "village votes on wolves", "days survived", "calls/game", "tokens/game")
        for r in summary.results:
            table.add_row(
                r.condition,
                *(f"{w.accuracy:.2f} [{w.ci_low:.2f}, {w.ci_high:.2f}]"
                  for w in (r.village, r.werewolves)),
                f"{r.village_votes_on_wolves:.2f}", f"{r.mean_days_survived:.2f}",
                f"{r.llm_calls_per_game:.1f}", f"{r.tokens_per_game:.0f}")
        console.print(table)
        if summary.paired:
            console.print(paired_table(summary.paired))
        calls = summary.llm_calls
        console.print(f"model requests: {calls.requests} ({calls.cache_hits} from the cache, "
                      f"{calls.new_calls} new)")
        where = summary.folder
        console.print(f"wrote {where}/evaluate.json and {where}/evaluate.png")


def evaluate_command(cfg: EvaluateConfig, steer: str, out: str, ray: str | None,
                     workers: int | None, resume: bool, conditions: str) -> str:
    """The command as the doc quotes it: the given settings, defaults left out."""
    from gtsteer.runs.werewolf_evaluate import EvaluateConfig

    default = EvaluateConfig()
    parts = ["gtsteer werewolf evaluate", f"--games {cfg.games}", f"--steer {steer}"]
    flags = {"llm": "--llm", "players": "--players", "max_messages": "--max-messages",
             "max_days": "--max-days", "seed": "--seed"}
    parts += [f"{flag} {getattr(cfg, name)}" for name, flag in flags.items()
              if getattr(cfg, name) != getattr(default, name)]
    parts += [f"--conditions {conditions}"] if conditions else []
    parts += [f"--ray {ray}"] if ray else []
    parts += [f"--workers {workers}"] if workers else []
    parts += ["--resume"] if resume else []
    return " ".join([*parts, f"--out {out}"])


def paired_table(paired: list[PairedDifference]) -> Table:
    """Each condition minus static on the same seeds: village wins and votes on wolves."""
    table = Table("condition", "seeds", "wins: only it / only static", "win-rate difference"
                  " [95%]", "McNemar p", "votes on wolves, difference [95%]",
                  "seeds to exclude 0", title="paired with static (same seeds)")
    for d in paired:
        table.add_row(d.condition, str(d.seeds), f"{d.condition_only_wins} / {d.static_only_wins}",
                      signed_span(d.village_win_difference, d.low, d.high), f"{d.mcnemar_p:.3f}",
                      signed_span(d.votes_on_wolves_difference, d.votes_low, d.votes_high),
                      "-" if d.seeds_to_exclude_zero is None else str(d.seeds_to_exclude_zero))
    return table


def signed_span(mean: float | None, low: float | None, high: float | None) -> str:
    """`+0.05 [-0.10, +0.20]` (also in the lab's werewolf_paired section of the docs)."""
    if mean is None:
        return "-"
    inside = "" if low is None or high is None else f" [{low:+.2f}, {high:+.2f}]"
    return f"{mean + 0.0:+.2f}{inside}"
