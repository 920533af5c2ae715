"""`gtsteer werewolf steer-train`: logged bot-only games -> playstyle games -> CFR -> records ->
a `DistilledPolicy` that `play --steer` and `evaluate` load.

1. play `games` bot-only games with their assigned styles (`games.sqlite`); every discussion turn,
   rebuilt from SQLite by replaying the stored decisions, is a candidate root;
2. solve the `PlaystyleGame` at `states` sampled roots (`states.jsonl`) with C++ CFR+;
3. one `DecisionRecord` per information state (the hook view, the CFR policy, the reach weight)
   -> `records.jsonl`, a view reached from two roots pooled into one (`pool_shared_views`);
4. `train_policy`, held out by logged game (its roots share its chat) -> `policy/`.

A logged game and a playstyle game are each a unit of work (`--ray`: a task); training stays here.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyspiel
from pydantic import BaseModel, Field

from gtsteer.binding import progress as shown
from gtsteer.imitation.build import reach_weighted_records
from gtsteer.imitation.dataset import DecisionRecord, records_to_jsonl
from gtsteer.imitation.policy import TextEmbedder
from gtsteer.imitation.train_types import TrainConfig
from gtsteer.llm import LLM
from gtsteer.llm.usage import LLMCalls
from gtsteer.runs.atomic import atomic_dir
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.executor import SERIAL, Executor, InOrder
from gtsteer.runs.output import RunResult, finish_run_dir, prepare_run_dir, write_text
from gtsteer.solvers.cfr import CFRResult, solve_cfr
from gtsteer.solvers.metrics import nash_conv
from gtsteer.werewolf.bot_games import (
    BotGamesConfig,
    GameSetup,
    PlayedGame,
    driver_model,
    game_pool,
    play_game,
)
from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import options_for
from gtsteer.werewolf.state import GameState
from gtsteer.werewolf.steer_game import (
    PlaystyleGame,
    PlaystyleGameConfig,
    PlaystyleGameError,
    pick_speakers,
)
from gtsteer.werewolf.steering import POLICY_DIR
from gtsteer.werewolf.store import GameStore

SUMMARY_FILE = "steer_train.json"


class SteerTrainConfig(BotGamesConfig):
    games: int = Field(4, ge=1)
    max_days: int = Field(2, ge=1)
    #: Playstyle games solved (roots sampled from all logged discussion turns).
    states: int = Field(20, ge=1)
    num_llm_seeds: int = Field(1, ge=1, le=8)
    max_speakers: int = Field(2, ge=2, le=4)
    styles: list[str] = Field(default_factory=lambda: list(options_for("speak")))
    iterations: int = Field(200, ge=1)
    embedder: str | None = None
    train_steps: int = Field(2000, ge=1)


class SolvedState(BaseModel):
    game_id: str
    step: int
    day: int
    speakers: list[str]
    teams: list[str]
    sizes: dict[str, int]
    message_calls: int
    prediction_calls: int
    prompt_tokens: int
    completion_tokens: int
    info_states: int
    nash_conv: float
    expand_seconds: float
    solve_seconds: float


class SteerTrainSummary(RunResult):
    schema_version: int = 1
    config: SteerTrainConfig
    logged_games: list[str]
    candidate_states: int
    solved: list[SolvedState]
    records: int
    llm_calls: int
    seconds_games: float
    seconds_states: float
    seconds_train: float
    #: Records folded into another root's record of the same view (`pool_shared_views`).
    pooled_views: int = 0
    train: dict
    #: Why fewer states were solved than asked for, and what to pass instead (empty when not).
    shortfall: str = ""
    #: Model requests of the logged and the playstyle games: the cache's share and the new
    #: calls (a rerun: 0 new); `llm_calls` counts the playstyle games' calls, cached or not.
    model_calls: LLMCalls = Field(default_factory=LLMCalls)


def shortfall(cfg: SteerTrainConfig, candidates: int) -> str:
    """A sentence when the logged games held fewer eligible states than `cfg.states`."""
    if candidates >= cfg.states:
        return ""
    per_game = candidates / cfg.games
    need = math.ceil(cfg.states / per_game) if per_game else None
    hint = f"pass --games {need} or more" if need else "play longer games (--max-days)"
    return (f"{cfg.games} logged games held only {candidates} discussion states with a werewolf "
            f"and a village-side bot among the next speakers (asked for {cfg.states}); all "
            f"{candidates} were solved: {hint}")


def records_of(game: PlaystyleGame, policy: dict[str, list[tuple[int, float]]],
               instance: int) -> list[DecisionRecord]:
    """One record per information state (`imitation.build`'s reach-weighted walk)."""
    labels = game.config.styles

    def probs_at(_state: pyspiel.State, _player: int, key: str) -> dict[int, float]:
        return dict(policy[key])

    def record_at(_state: pyspiel.State, player: int, key: str,
                  probs: Mapping[int, float]) -> DecisionRecord:
        bot = game.speakers[player]
        target = [float(probs.get(i, 0.0)) for i in range(len(labels))]
        total = sum(target)
        return DecisionRecord(
            text=key, actions=list(labels), target=[t / total for t in target],
            weight=0.0, instance=instance, player=player,
            metadata={"game_id": game.source.game_id, "step": game.source.step,
                      "bot": bot, "team": game.teams[player],
                      "role": game.root.player(bot).role.value})

    return reach_weighted_records(game, probs_at, record_at)


def pool_shared_views(records: list[DecisionRecord]) -> list[DecisionRecord]:
    """One record per view text: two roots' games can reach one view; their targets are
    averaged by reach weight (what cross-entropy on both records fits anyway), so a view has
    one target on one side of the split (the first record's logged game)."""
    by_text: dict[str, list[DecisionRecord]] = {}
    for rec in records:
        by_text.setdefault(rec.text, []).append(rec)
    out = []
    for group in by_text.values():
        first = group[0]
        if len(group) == 1:
            out.append(first)
            continue
        total = sum(r.weight for r in group)
        shares = ([r.weight / total for r in group] if total > 0
                  else [1.0 / len(group)] * len(group))
        target = [sum(w * r.target[i] for w, r in zip(shares, group, strict=True))
                  for i in range(len(first.target))]
        out.append(first.model_copy(update={
            "target": target, "weight": total,
            "metadata": {**first.metadata, "pooled_steps": [r.metadata["step"] for r in group]}}))
    return out


def logged_setups(cfg: SteerTrainConfig, completion_style: bool | None = None
                  ) -> list[GameSetup]:
    return [cfg.setup(f"steer-{cfg.seed}-{g}", g, completion_style) for g in range(cfg.games)]


def play_logged_games(cfg: SteerTrainConfig, store: GameStore, pool: LLMPool,
                      progress: Callable[[str], None] | None = None, *,
                      executor: Executor = SERIAL) -> tuple[list[str], LLMCalls]:
    """Bot-only games with the assigned styles, logged into `store`: their ids and calls."""
    setups = logged_setups(cfg, pool.force_completion)

    def write(_: int, game: PlayedGame) -> None:
        game.write_to(store)
        if progress:
            progress(game.created.game_id)

    run = executor.run(play_game, setups, driver_model(pool, cfg.llm),
                       on_result=InOrder(write), label="bot-only games")
    return [s.game_id for s in setups], run.calls


def logged_discussion_states(store: GameStore, game_id: str, max_speakers: int
                             ) -> list[GameState]:
    """Every discussion turn of a stored game that can root a playstyle game, rebuilt from
    SQLite alone."""
    from gtsteer.werewolf.replay import replay  # the replay the web app serves, checked end to end

    out = []
    for _before, after, _decision in replay(store.load(game_id), store.steps(game_id)):
        want = pending(after)
        if after.phase != "discussion" or want is None or want.kind != "speak":
            continue
        try:
            pick_speakers(after, max_speakers)
        except PlaystyleGameError:
            continue
        out.append(after)
    return out


def game_config(cfg: SteerTrainConfig) -> PlaystyleGameConfig:
    return PlaystyleGameConfig(num_llm_seeds=cfg.num_llm_seeds, max_speakers=cfg.max_speakers,
                               styles=cfg.styles)


def pick_states(candidates: list[GameState], states: int, seed: int) -> list[GameState]:
    """`states` of the candidates, drawn with `seed` (`python -m lab werewolf-styles` draws
    alike, so it measures the lines at the very roots a policy was trained on)."""
    return random.Random(seed).sample(candidates, min(states, len(candidates)))


def solve_playstyle(state: GameState, pool: LLMPool, cfg: SteerTrainConfig
                    ) -> tuple[PlaystyleGame, CFRResult, SolvedState]:
    """The playstyle game at `state`, expanded and solved with C++ CFR+, and what it cost
    (`steer-train` and the lab's `werewolf-heldout` solve alike)."""
    game = PlaystyleGame(state, pool, game_config(cfg))
    start = time.perf_counter()
    game.expand()  # every LLM call, so the solve below is pure CFR
    expanded = time.perf_counter() - start
    result = solve_cfr(game, solver="cfr+", iterations=cfg.iterations,
                       allow_python_fallback=False)
    conv = nash_conv(result.game, result.policy)
    info = SolvedState(
        game_id=state.game_id, step=state.step, day=state.day, speakers=game.speakers,
        teams=game.teams, sizes=game.sizes(), message_calls=len(game.calls),
        prediction_calls=game.prediction_calls,
        prompt_tokens=sum(c.prompt_tokens for c in game.calls),
        completion_tokens=sum(c.completion_tokens for c in game.calls),
        info_states=result.info_states, nash_conv=conv, expand_seconds=expanded,
        solve_seconds=result.seconds)
    return game, result, info


@dataclass(frozen=True)
class PlaystyleJob:
    """One sampled logged state to solve: the unit of work of step 2."""

    state: GameState
    cfg: SteerTrainConfig
    #: The logged game's index (the train/held-out split is by logged game).
    instance: int
    completion_style: bool | None = None


def solve_playstyle_job(job: PlaystyleJob, model: LLM
                        ) -> tuple[list[DecisionRecord], SolvedState]:
    game, result, info = solve_playstyle(job.state, game_pool(model, job.completion_style),
                                         job.cfg)
    return records_of(game, result.policy, job.instance), info


class SteerTrainOptions(Options):
    """None beyond `SteerTrainConfig` (an `Embedder` object is the context's `embedder`)."""


@driver("werewolf steer-train")
def run(config: SteerTrainConfig, ctx: RunContext, options: SteerTrainOptions
        ) -> SteerTrainSummary:
    """`gtsteer werewolf steer-train` into `ctx.out` (required)."""
    if ctx.out is None:
        raise ValueError("--out: give the folder of the run")
    cfg, executor = config, ctx.executor.quiet
    embedder: TextEmbedder | None = ctx.given("embedder")
    if isinstance(embedder, str):  # the name belongs in the config, which the policy records
        raise ValueError(f"embedder {embedder!r}: steer-train takes its embedder's name from"
                         " the config's `embedder`; the context may give an Embedder object")
    pool = ctx.pool(cfg.llm)
    root = prepare_run_dir(ctx.out, (POLICY_DIR,), summary=SUMMARY_FILE)
    # A rerun starts from fresh logs (the LLM cache makes it cheap).
    store = GameStore.fresh(root / "games.sqlite")
    with executor.session():
        t0 = time.perf_counter()
        advance = shown.counter("bot-only games", cfg.games)
        ids, game_calls = play_logged_games(cfg, store, pool, lambda _: advance(),
                                            executor=executor)
        candidates = [s for gid in ids
                      for s in logged_discussion_states(store, gid, cfg.max_speakers)]
        t1 = time.perf_counter()
        if not candidates:
            raise PlaystyleGameError("the logged games have no discussion turn with a werewolf "
                                     "and a village-side bot among the next speakers")
        picked = pick_states(candidates, cfg.states, cfg.seed)
        write_text(root / "states.jsonl", "".join(s.model_dump_json() + "\n" for s in picked))
        records: list[DecisionRecord] = []
        solved: list[SolvedState] = []
        advance = shown.counter("playstyle games (expand + CFR+)", len(picked))

        def collect(_: int, done: tuple[list[DecisionRecord], SolvedState]) -> None:
            records.extend(done[0])
            solved.append(done[1])
            advance()

        jobs = [PlaystyleJob(state, cfg, ids.index(state.game_id), pool.force_completion)
                for state in picked]
        units_run = executor.run(solve_playstyle_job, jobs, driver_model(pool, cfg.llm),
                                 on_result=InOrder(collect), label="playstyle games")
        t2 = time.perf_counter()
    solved_records = len(records)
    records = pool_shared_views(records)
    write_text(root / "records.jsonl", records_to_jsonl(records))
    if embedder is None:
        from gtsteer.llm.embed import get_embedder

        embedder = get_embedder(cfg.embedder)
    from gtsteer.imitation.train import train_policy  # torch: only when training (startup time)

    # Held out by logged game: the roots of one game share its logged chat.
    n_games = len({r.instance for r in records})
    train_cfg = TrainConfig(steps=cfg.train_steps, seed=cfg.seed,
                            holdout=0.2 if n_games >= 5 else 0.0, curve_points=10)
    policy, report = train_policy(records, embedder, train_cfg, domain="werewolf-playstyle")
    with atomic_dir(root / POLICY_DIR) as tmp:
        policy.save(tmp)
    t3 = time.perf_counter()
    summary = SteerTrainSummary(
        config=cfg, logged_games=ids, candidate_states=len(candidates), solved=solved,
        records=len(records), pooled_views=solved_records - len(records),
        llm_calls=sum(s.message_calls + s.prediction_calls for s in solved),
        seconds_games=t1 - t0, seconds_states=t2 - t1, seconds_train=t3 - t2,
        train=report.model_dump(exclude={"curve"}), shortfall=shortfall(cfg, len(candidates)),
        model_calls=game_calls + units_run.calls)
    finish_run_dir(root, SUMMARY_FILE, summary)
    store.close()
    return summary.written_to(root)
