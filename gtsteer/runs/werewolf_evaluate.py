"""`gtsteer werewolf evaluate`: does steering help? Bot-only games on the same seeds under
each condition (who is steered by the distilled chooser, who keeps a baseline), with win rates
(95% Wilson intervals), the fraction of village votes that hit a wolf, mean days survived by
the condition's team, and LLM calls and tokens per game. `evaluate.json` + `evaluate.png`.

One seed's games, under each condition in turn, are one unit of work (`gtsteer.runs.units`),
not one game: the conditions replay the same seed and so share requests, and only in the serial
order does each game meet the serial run's cache hits (a structured answer read from the cache
counts 0 tokens), so `--ray` gives the serial run's tokens and call counts.

Each finished seed is saved (`seeds/<g>.json.gz`, with the run's key), so `resume` keeps the
seeds of a run with the same settings, rebuilds the database from them and plays the rest: the
results equal one uninterrupted run's. With the static condition played, every other one is
compared with it seed by seed (`PairedDifference`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from gtsteer.binding import progress as shown
from gtsteer.evals.paired import PairedDifference, paired_difference, votes_on_wolves, win_rates
from gtsteer.llm import LLM
from gtsteer.llm.usage import LLMCalls
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.executor import InOrder
from gtsteer.runs.ledger import Ledger, digest_key
from gtsteer.runs.output import RunResult, finish_run_dir, pyplot, save_png
from gtsteer.runs.units import RayOptions
from gtsteer.solvers.metrics import TeamRate
from gtsteer.werewolf.bot_games import (
    BotGamesConfig,
    GameSetup,
    PlayedGame,
    Steering,
    driver_model,
    play_game,
)
from gtsteer.werewolf.playstyles import (
    AssignedPlaystyle,
    PlaystyleChooser,
    TeamChooser,
    UniformPlaystyle,
)
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameState
from gtsteer.werewolf.steering import DistilledPlaystyleChooser
from gtsteer.werewolf.store import GameStore

#: condition -> (team whose styles differ from the static baseline, chooser of that team).
CONDITIONS: dict[str, tuple[str, str]] = {
    "neither steered (static)": ("none", "static"),
    "village uniform": ("village", "uniform"),
    "werewolves uniform": ("werewolves", "uniform"),
    "village steered": ("village", "steer"),
    "werewolves steered": ("werewolves", "steer"),
    "both steered": ("both", "steer"),
}


#: `--conditions` names, in `CONDITIONS` order.
CONDITION_KEYS: dict[str, str] = dict(zip(
    ("static", "village-uniform", "wolves-uniform", "village-steered", "wolves-steered",
     "both-steered"), CONDITIONS, strict=True))
STATIC = "static"


class EvaluateConfig(BotGamesConfig):
    games: int = Field(10, ge=1)
    max_days: int | None = Field(4, ge=1)
    #: The conditions played (`CONDITION_KEYS`), kept in `CONDITIONS` order.
    conditions: list[str] = Field(default_factory=lambda: list(CONDITION_KEYS))

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in CONDITION_KEYS]
        if unknown:
            raise ValueError(f"unknown condition(s) {unknown}; choose from "
                             f"{', '.join(CONDITION_KEYS)}")
        if not value:
            raise ValueError("name at least one condition")
        return [k for k in CONDITION_KEYS if k in value]


class ConditionResult(BaseModel):
    condition: str
    team: str
    chooser: str
    village: TeamRate
    werewolves: TeamRate
    #: Village-side votes whose target was a werewolf, over all village-side votes.
    village_votes_on_wolves: float
    #: Mean days survived by the condition's team (all bots when `team` is none or both).
    mean_days_survived: float
    llm_calls_per_game: float
    tokens_per_game: float
    #: The model's seconds per game: the latencies of its calls summed (a cache hit costs
    #: about 0), on the machine that played it, beside whatever else ran there.
    model_seconds_per_game: float = 0.0
    game_ids: list[str]


class EvaluateSummary(RunResult):
    #: 2: `conditions`, `paired`, resumable seeds; 3: `command`, `workers`, `finished`, model
    #: seconds per game.
    schema_version: int = 3
    config: EvaluateConfig
    steer: str
    #: The command line that ran it (the doc section quotes it).
    command: str = ""
    #: Games played at once (`--ray local --workers N`: N; serial: 1; a cluster: None).
    workers: int | None = 1
    #: When the last seed finished (UTC).
    finished: str = ""
    results: list[ConditionResult]
    #: Every played condition against static, seed by seed (empty without static).
    paired: list[PairedDifference] = Field(default_factory=list)
    #: Model requests of all games: the cache's share and the new calls (a rerun: 0 new).
    llm_calls: LLMCalls = Field(default_factory=LLMCalls)


def chooser_for(team: str, kind: str, steered: PlaystyleChooser) -> PlaystyleChooser:
    if kind == "static":
        return AssignedPlaystyle()
    return TeamChooser(steered if kind == "steer" else UniformPlaystyle(), team)


def days_survived(state: GameState, team: str) -> list[int]:
    out = []
    for p in state.players:
        side = "werewolves" if p.role is Role.WEREWOLF else "village"
        if team in ("none", "both") or side == team:
            out.append(p.died_day if p.died_day is not None else state.day)
    return out


@dataclass(frozen=True)
class EvaluationGame:
    setup: GameSetup
    team: str
    kind: str


@dataclass(frozen=True)
class EvaluationSeed:
    """One seed's game under every condition, in the conditions' order: the unit of work."""

    games: tuple[EvaluationGame, ...]
    steering: Steering


def play_evaluation_seed(unit: EvaluationSeed, model: LLM) -> list[PlayedGame]:
    played = []
    for game in unit.games:
        # Only steered conditions load the policy (on a worker: once per process).
        steered = unit.steering.get() if game.kind == "steer" else AssignedPlaystyle()
        played.append(play_game(game.setup, model, chooser_for(game.team, game.kind, steered)))
    return played


class EvaluateOptions(Options):
    """`gtsteer werewolf evaluate`'s options beyond its recorded settings (`EvaluateConfig`)."""

    #: The `steer-train` folder whose policy steers (`--steer`).
    steer: str | Path
    resume: bool = False
    #: The command line, quoted in the doc section.
    command: str = ""


@driver("werewolf evaluate")
def run(config: EvaluateConfig, ctx: RunContext, options: EvaluateOptions) -> EvaluateSummary:
    """`gtsteer werewolf evaluate` into `ctx.out` (required). On Ray the workers load the
    policy from the folder's files (`Steering`), unless the context gives an in-process
    `chooser`, which then travels as it is."""
    if ctx.out is None:
        raise ValueError("--out: give the folder of the run")
    cfg, steer, ray = config, options.steer, ctx.ray
    steered: PlaystyleChooser | None = ctx.given("chooser")
    pool = ctx.pool(cfg.llm)
    given = steered is not None
    steered = steered or DistilledPlaystyleChooser.load(steer)  # a bad folder fails here
    key = run_key(cfg, steer)
    played = [c for c, k in enumerate(CONDITION_KEYS) if k in cfg.conditions]
    ledger = Ledger.open(ctx.out, SEEDS_DIR, key, SavedSeed, resume=options.resume,
                         summary="evaluate.json", suffix=".json.gz")
    kept = saved_seeds(ledger, cfg.games, played) if options.resume else []
    root = ledger.folder.parent
    store = GameStore.fresh(root / "evaluate.sqlite")  # rebuilt from the seeds, in order
    steering = Steering.from_folder(steer) if ray is not None and not given \
        else Steering(chooser=steered)
    units = [EvaluationSeed(tuple(
        EvaluationGame(cfg.setup(game_id(c, g), g, pool.force_completion),
                       *CONDITIONS[list(CONDITIONS)[c]])
        for c in played), steering)
        for g in range(cfg.games)]
    finals: dict[str, GameState] = {}
    advance = shown.counter("evaluation games", cfg.games * len(played))

    def store_seed(games: list[PlayedGame]) -> None:
        for game in games:
            game.write_to(store)
            finals[game.created.game_id] = game.final
        advance(len(games))

    for games in kept:
        store_seed(games)

    def write(i: int, games: list[PlayedGame]) -> None:
        g = len(kept) + i
        ledger.add(g, SavedSeed(run_key=key, seed_index=g, games=games))
        store_seed(games)

    units_run = ctx.executor.quiet.run(play_evaluation_seed, units[len(kept):],
                                       driver_model(pool, cfg.llm), on_result=InOrder(write),
                                       label="evaluation seeds")
    results = []
    for c in played:
        name = list(CONDITIONS)[c]
        team, kind = CONDITIONS[name]
        ids = [game_id(c, g) for g in range(cfg.games)]
        results.append(_condition(store, name, team, kind, [finals[i] for i in ids], ids))
    paired = paired_differences(cfg, finals) if STATIC in cfg.conditions else []
    summary = EvaluateSummary(config=cfg, steer=str(steer), results=results, paired=paired,
                              llm_calls=units_run.calls, command=options.command,
                              workers=games_at_once(ray),
                              finished=f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    finish_run_dir(root, "evaluate.json", summary)
    plot(summary, root / PLOT_FILE)
    store.close()
    return summary.written_to(root)


def games_at_once(ray: RayOptions | None) -> int | None:
    """Seeds played at once (None where a cluster decides)."""
    if ray is None:
        return 1
    if ray.address != "local":
        return None
    return ray.workers or os.cpu_count() or 1  # --ray local's default: every CPU


#: The finished seeds of a run (`seeds/<g>.json.gz`).
SEEDS_DIR = "seeds"
PLOT_FILE = "evaluate.png"


def game_id(condition: int, seed_index: int) -> str:
    return f"eval-{condition}-{seed_index}"


def run_key(cfg: EvaluateConfig, steer: str | Path) -> str:
    """What a saved seed must have been played with to be kept: every setting but the number
    of seeds, and the policy's files."""
    return digest_key(cfg.model_dump_json(exclude={"games"}),
                      *(name.encode() + b"\0" + data
                        for name, data in Steering.from_folder(steer).files))


class SavedSeed(BaseModel):
    """One seed's games under each played condition (a damaged game fails to load the file,
    so the seed is played again)."""

    run_key: str
    seed_index: int
    games: list[PlayedGame]


def saved_seeds(ledger: Ledger[SavedSeed], games: int, played: Sequence[int]
                ) -> list[list[PlayedGame]]:
    """The seeds 0, 1, ... an earlier run with this key finished, up to the first one missing
    or damaged (seeds are saved in order), at most `games` of them; each must hold one game
    per condition in `played` (their indices in `CONDITIONS`)."""
    kept: list[list[PlayedGame]] = []
    for g, saved in enumerate(ledger.prefix(games, lambda g, s: s.seed_index == g)):
        if [p.created.game_id for p in saved.games] != [game_id(c, g) for c in played]:
            break  # not this seed's games, one per condition: replay
        kept.append(saved.games)
    return kept


def paired_differences(cfg: EvaluateConfig, finals: Mapping[str, GameState]
                       ) -> list[PairedDifference]:
    static = list(CONDITION_KEYS).index(STATIC)
    base = [finals[game_id(static, g)] for g in range(cfg.games)]
    out = []
    for c, key in enumerate(CONDITION_KEYS):
        if key == STATIC or key not in cfg.conditions:
            continue
        games = [finals[game_id(c, g)] for g in range(cfg.games)]
        out.append(paired_difference(
            list(CONDITIONS)[c], [s.winner == "village" for s in games],
            [s.winner == "village" for s in base],
            [votes_on_wolves([s]) for s in games], [votes_on_wolves([s]) for s in base]))
    return out


def _condition(store: GameStore, name: str, team: str, kind: str, finals: list[GameState],
               ids: list[str]) -> ConditionResult:
    n = len(finals)
    calls = [c for gid in ids for c in store.calls(gid)]
    days = [d for s in finals for d in days_survived(s, team)]
    rates = win_rates(finals)
    return ConditionResult(
        condition=name, team=team, chooser=kind,
        village=rates["village"], werewolves=rates["werewolves"],
        village_votes_on_wolves=votes_on_wolves(finals) or 0.0,
        mean_days_survived=sum(days) / len(days) if days else 0.0,
        llm_calls_per_game=len(calls) / n,
        tokens_per_game=sum(c.prompt_tokens + c.completion_tokens for c in calls) / n,
        model_seconds_per_game=sum(c.latency_s for c in calls) / n,
        game_ids=ids,
    )


def plot(summary: EvaluateSummary, path: Path) -> Path:
    plt = pyplot()

    rows = summary.results
    paired = [d for d in summary.paired if d.low is not None and d.high is not None]
    if paired:
        fig, (ax, pax) = plt.subplots(1, 2, figsize=(13, 4), width_ratios=(3, 2))
        _plot_paired(pax, paired)
    else:
        fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(rows))
    width = 0.38
    for k, (side, color) in enumerate((("village", "tab:blue"), ("werewolves", "tab:red"))):
        rates = [getattr(r, side) for r in rows]
        ax.bar([i + (k - 0.5) * width for i in x], [r.accuracy for r in rates], width,
               color=color, label=f"{side} win rate",
               yerr=[[r.accuracy - r.ci_low for r in rates],
                     [r.ci_high - r.accuracy for r in rates]],
               capsize=3)
    ax.set_xticks(list(x), [r.condition for r in rows], rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.2)  # headroom for the legend above the intervals
    ax.set_ylabel("win rate (95% Wilson)")
    ax.set_title(f"Werewolf steering: {summary.config.games} games per condition, "
                 f"{summary.config.llm}")
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    return save_png(fig, path)


def _plot_paired(ax: Any, paired: list[PairedDifference]) -> None:
    y = range(len(paired))
    ax.errorbar([d.village_win_difference for d in paired], list(y), fmt="o", capsize=3,
                xerr=[[d.village_win_difference - (d.low or 0.0) for d in paired],
                      [(d.high or 0.0) - d.village_win_difference for d in paired]])
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_yticks(list(y), [d.condition for d in paired], fontsize=8)
    ax.set_xlabel("village win rate minus static, same seeds (95% paired bootstrap)")
    ax.set_title(f"paired over {paired[0].seeds} seeds", fontsize=9)
