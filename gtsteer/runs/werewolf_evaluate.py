"""`gtsteer werewolf evaluate`: does steering help? Bot-only games on the same seeds under
each condition (who is steered by the distilled chooser, who keeps a baseline), with win rates
(95% Wilson intervals), the fraction of village votes that hit a wolf, mean days survived by
the condition's team, and LLM calls and tokens per game. `evaluate.json` + `evaluate.png`.

One seed's games, under each condition in turn, are one unit of work (`gtsteer.runs.units`),
so `--ray` plays them as Ray tasks with the results of the serial run. Not one game per unit:
the conditions replay the same seed, so their games share requests (a condition that leaves a
team unchanged repeats that team's opening calls), and a structured answer read from the cache
counts 0 tokens. Played in the serial order within one task, each game meets the same cache
hits as serially, so `tokens_per_game` (and the call counts) equal the serial run's; games of
different seeds share no request (the seed is in every request).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field
from rich.progress import Progress

from gtsteer.llm import LLM
from gtsteer.llm.usage import LLMCalls
from gtsteer.runs.output import RunResult, finish_run_dir, prepare_run_dir, save_png
from gtsteer.runs.units import RayOptions, run_units
from gtsteer.runs.werewolf_games import (
    GameSetup,
    InOrder,
    PlayedGame,
    Steering,
    driver_model,
    play_game,
)
from gtsteer.solvers.metrics import wilson
from gtsteer.werewolf.llmcalls import LLMPool
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


class EvaluateConfig(BaseModel):
    games: int = Field(10, ge=1)
    llm: str = "local"
    players: int = Field(7, ge=5, le=12)
    max_messages: int = Field(4, ge=1)
    max_days: int | None = Field(4, ge=1)
    seed: int = 0


class Rate(BaseModel):
    wins: int
    games: int
    rate: float
    low: float
    high: float


class ConditionResult(BaseModel):
    condition: str
    team: str
    chooser: str
    village: Rate
    werewolves: Rate
    #: Village-side votes whose target was a werewolf, over all village-side votes.
    village_votes_on_wolves: float
    #: Mean days survived by the condition's team (all bots when `team` is none or both).
    mean_days_survived: float
    llm_calls_per_game: float
    tokens_per_game: float
    game_ids: list[str]


class EvaluateSummary(RunResult):
    #: The summary format (1: the first versioned one).
    schema_version: int = 1
    config: EvaluateConfig
    steer: str
    results: list[ConditionResult]
    #: Model requests of all games: the cache's share and the new calls (a rerun: 0 new).
    llm_calls: LLMCalls = Field(default_factory=LLMCalls)


def win_rate(wins: int, games: int) -> Rate:
    """`wins` of `games` with the 95% Wilson interval of `solvers.metrics.wilson`."""
    share = wilson(wins, games)
    return Rate(wins=wins, games=games, rate=share.accuracy, low=share.ci_low, high=share.ci_high)


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
    """One game of one condition."""

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


def evaluate(cfg: EvaluateConfig, steer: str | Path, out: str | Path, *,
             steered: PlaystyleChooser | None = None, pool: LLMPool | None = None,
             show_progress: bool = True, ray: RayOptions | None = None) -> EvaluateSummary:
    """`ray` plays each game as a Ray task (`gtsteer.runs.units`); the results are the same.
    There the workers load the policy from the folder's files (`Steering`), unless `steered`
    (an in-process chooser) is given, which then travels as it is."""
    root = prepare_run_dir(out, summary="evaluate.json")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root / 'evaluate.sqlite'}{suffix}").unlink(missing_ok=True)
    store = GameStore(root / "evaluate.sqlite")
    given = steered is not None
    steered = steered or DistilledPlaystyleChooser.load(steer)  # a bad folder fails here
    steering = Steering.from_folder(steer) if ray is not None and not given \
        else Steering(chooser=steered)
    pool = pool or LLMPool()
    units = [EvaluationSeed(tuple(
        EvaluationGame(GameSetup(f"eval-{c}-{g}", cfg.seed + g, cfg.players, cfg.llm,
                                 cfg.max_days, cfg.max_messages, pool.force_completion),
                       team, kind)
        for c, (team, kind) in enumerate(CONDITIONS.values())), steering)
        for g in range(cfg.games)]
    finals: dict[str, GameState] = {}
    with Progress(disable=not show_progress) as bar:
        task = bar.add_task("evaluation games", total=cfg.games * len(CONDITIONS))

        def write(_: int, games: list[PlayedGame]) -> None:
            for game in games:
                game.write_to(store)
                finals[game.created.game_id] = game.final
            bar.advance(task, len(games))

        run = run_units(play_evaluation_seed, units, driver_model(pool, cfg.llm), ray=ray,
                        on_result=InOrder(write), label="evaluation seeds")
    results = []
    for c, (name, (team, kind)) in enumerate(CONDITIONS.items()):
        ids = [f"eval-{c}-{g}" for g in range(cfg.games)]
        results.append(_condition(store, name, team, kind, [finals[i] for i in ids], ids))
    summary = EvaluateSummary(config=cfg, steer=str(steer), results=results, llm_calls=run.calls)
    finish_run_dir(root, "evaluate.json", summary)
    plot(summary, root / "evaluate.png")
    store.close()
    return summary.written_to(root)


def _condition(store: GameStore, name: str, team: str, kind: str, finals: list[GameState],
               ids: list[str]) -> ConditionResult:
    n = len(finals)
    on_wolf = total = 0
    for s in finals:
        for v in s.votes:
            if s.player(v.voter).role is not Role.WEREWOLF:
                total += 1
                on_wolf += s.player(v.target).role is Role.WEREWOLF
    calls = [c for gid in ids for c in store.calls(gid)]
    days = [d for s in finals for d in days_survived(s, team)]
    return ConditionResult(
        condition=name, team=team, chooser=kind,
        village=win_rate(sum(s.winner == "village" for s in finals), n),
        werewolves=win_rate(sum(s.winner == "werewolves" for s in finals), n),
        village_votes_on_wolves=on_wolf / total if total else 0.0,
        mean_days_survived=sum(days) / len(days) if days else 0.0,
        llm_calls_per_game=len(calls) / n,
        tokens_per_game=sum(c.prompt_tokens + c.completion_tokens for c in calls) / n,
        game_ids=ids,
    )


def plot(summary: EvaluateSummary, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary.results
    fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(rows))
    width = 0.38
    for k, (side, color) in enumerate((("village", "tab:blue"), ("werewolves", "tab:red"))):
        rates = [getattr(r, side) for r in rows]
        ax.bar([i + (k - 0.5) * width for i in x], [r.rate for r in rates], width, color=color,
               label=f"{side} win rate",
               yerr=[[r.rate - r.low for r in rates], [r.high - r.rate for r in rates]],
               capsize=3)
    ax.set_xticks(list(x), [r.condition for r in rows], rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.2)  # headroom for the legend above the intervals
    ax.set_ylabel("win rate (95% Wilson)")
    ax.set_title(f"Werewolf steering: {summary.config.games} games per condition, "
                 f"{summary.config.llm}")
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    return save_png(fig, path)
