"""`python -m lab werewolf-heldout` (lab/studies/werewolf_heldout_command.py): a steering
policy's gain on fresh samples, in its own game: Table 1's question for Werewolf, asked
without playing full games.

For each held-out discussion state (a turn of a bot-only game the policy never trained on):

1. its playstyle game, built and solved with CFR+ exactly as `steer-train` solves one
   (`werewolf_steer.solve_playstyle`): the in-sample solution;
2. the same position built again with fresh message samples (`PlaystyleGame(...,
   sample_offset=num_llm_seeds)`: sample k is drawn as sample k + S, which the solved game
   never drew). Nothing sampled precedes the first speaker's decision, so its view there is the
   solved one word for word and its CFR policy is replayed exactly (checked per state): the
   clean estimate of `gtsteer solve --heldout` (`solvers.heldout`);
3. on that fresh tree, the first speaker's value (every later speaker `unsteered`) with its CFR
   policy, with the distilled policy (the MLP's distribution from the embedding of that view,
   masked to the game's styles, as the live chooser reads it), with `unsteered` (the unguided
   baseline, `any` of the dialogue domains) and with uniform over the playstyles (the
   `UniformPlaystyle` baseline of `werewolf evaluate`, which never plays `unsteered`). All four
   are valued on one tree, so they meet the same samples: a paired difference per state
   (`solvers.heldout.paired_versus`). The same on the solved tree gives the in-sample gain;
   in-sample minus fresh is the selection on sampling noise.

Held out, three ways (`HeldOutOverlapError` otherwise): the held-out games are dealt from seeds
outside the training run's (`seed .. seed + games - 1` of `steer_train.json`); no held-out
state comes from a game whose seed is among the training states' (`states.jsonl`); and no
held-out first speaker's view is a text the policy was trained on (`records.jsonl`).

The games, the playstyle game, the CFR settings and the model are the training run's
(`steer_train.json`), so the held-out states come from the distribution the policy was trained
on. States are taken game by game (at most `per_game` of a game's eligible turns, drawn with a
seed of that game), so a larger `--states` extends the same list.

Each state is a row (`rows/<i>.json`) holding every style's value on both trees and both
policies' distributions, so every interval recomputes from the rows (`--render-only`);
`resume` keeps the rows of a run with the same settings and policy and measures the rest.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyspiel
from pydantic import BaseModel, ConfigDict, Field

from gtsteer.binding import progress as shown
from gtsteer.imitation.policy import DistilledPolicy, TextEmbedder
from gtsteer.llm import LLM
from gtsteer.llm.usage import LLMCalls
from gtsteer.runs.context import RunContext
from gtsteer.runs.executor import Executor, InOrder
from gtsteer.runs.ledger import Ledger, digest_key
from gtsteer.runs.output import RunDirError, RunResult, check_in_dir, finish_run_dir
from gtsteer.runs.werewolf_steer import SUMMARY_FILE as TRAIN_SUMMARY
from gtsteer.runs.werewolf_steer import (
    SolvedState,
    SteerTrainConfig,
    game_config,
    logged_discussion_states,
    solve_playstyle,
)
from gtsteer.solvers.evaluate import Strategy, fixed, tabular, uniform
from gtsteer.solvers.heldout import VersusBaseline, paired_versus, value_of
from gtsteer.werewolf.bot_games import GameSetup, driver_model, game_pool, play_game
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import UNSTEERED
from gtsteer.werewolf.state import GameState
from gtsteer.werewolf.steer_game import PlaystyleGame
from gtsteer.werewolf.steering import POLICY_DIR, hook_policy_input
from gtsteer.werewolf.store import GameStore
from lab.studies.saved import DamagedFileError, drop_from, read_lines, read_result, write_lines
from lab.studies.werewolf_heldout_stats import GainStat, gain_stats

SUMMARY_FILE = "steer_heldout.json"
ROWS_DIR = "rows"
STATES_FILE = "states.jsonl"
GAMES_DB = "games.sqlite"
#: The policies measured (`VersusBaseline.replay`), the baselines (`.baseline`) and the trees
#: a gain is measured on, with their statistics, are `lab.studies.werewolf_heldout_stats`'s.


class HeldOutOverlapError(ValueError):
    """A held-out state is not held out: its game or its view is part of the training run."""


class SteerHeldoutConfig(BaseModel):
    """The settings of a held-out measurement; the games, the playstyle game and CFR follow the
    training run's `steer_train.json`."""

    #: The `steer-train` output folder (its `policy/`, `steer_train.json`, `states.jsonl`,
    #: `records.jsonl`).
    policy: str
    #: Held-out states to measure (taken game by game, so more states extend the list).
    states: int = Field(40, ge=1)
    #: At most this many eligible turns of one held-out game (adjacent turns of a game share
    #: its chat, so fewer per game means more independent rows).
    per_game: int = Field(4, ge=1)
    #: The seed of the first held-out game (game g: seed + g); None: the first seed after the
    #: training games'.
    seed: int | None = None
    #: Held-out games to play at most (None: 4 x the games `states / per_game` needs, + 4).
    max_games: int | None = Field(None, ge=1)
    #: The model; None: the training run's (another model measures transfer, and is recorded).
    llm: str | None = None


class FreshStateRow(BaseModel):
    """One held-out state: everything its numbers are made of (`rows/<i>.json`)."""

    run_key: str
    index: int
    game_id: str
    game_seed: int
    step: int
    day: int
    speakers: list[str]
    teams: list[str]
    #: The first speaker's role: the decision measured is its opening one.
    role: str
    styles: list[str]
    #: Fresh message sample k is drawn as sample k + sample_offset.
    sample_offset: int
    #: sha256 of the first speaker's view (the policies' input; the overlap check reads it).
    view_sha256: str
    #: The policies' distributions at that view (styles they never play are left out).
    cfr: dict[str, float]
    distilled: dict[str, float]
    #: The first speaker's value for each style at its opening (every later speaker
    #: `unsteered`), on the solved tree and on the fresh one: every gain below is a mixture
    #: of these.
    in_sample: dict[str, float]
    fresh: dict[str, float]
    #: The policies against the baselines (`replay` = policy, `others` = `unsteered`).
    versus: list[VersusBaseline]
    versus_in_sample: list[VersusBaseline]
    solved: SolvedState
    #: Model requests the fresh tree made (messages and predictions, cached or not).
    fresh_message_calls: int
    fresh_prediction_calls: int
    seconds: float

    def gain(self, policy: str, baseline: str, samples: str = "fresh") -> float:
        rows = self.versus if samples == "fresh" else self.versus_in_sample
        return next(v.gain for v in rows if v.replay == policy and v.baseline == baseline)

    @property
    def team(self) -> str:
        return self.teams[0]


class SteerHeldoutSummary(RunResult):
    #: The summary format (1: the first one).
    schema_version: int = 1
    #: The settings, with `seed` and `llm` resolved.
    config: SteerHeldoutConfig
    #: The training run's settings (what the games and the playstyle game follow).
    train: SteerTrainConfig
    run_key: str
    #: The game seeds of the training run, and those of the held-out games played.
    train_seeds: list[int]
    heldout_seeds: list[int]
    #: Eligible discussion turns in the held-out games played (None: a resumed run reused
    #: the states an earlier one picked, and played no game).
    candidate_states: int | None = None
    stats: list[GainStat]
    #: Why fewer states were measured than asked for (empty when not).
    shortfall: str = ""
    #: Model requests of the held-out games and states: the cache's share and the new calls.
    model_calls: LLMCalls = Field(default_factory=LLMCalls)
    #: The command line that ran it (the doc section quotes it).
    command: str = ""
    seconds: float = 0.0
    #: When the run finished (UTC, minutes).
    finished: str = ""

    @property
    def states(self) -> int:
        return self.stats[0].gain.n if self.stats else 0


# ---- the training run it measures ------------------------------------------------------------


@dataclass(frozen=True)
class TrainedRun:
    """What a `steer-train` folder holds that the held-out measurement needs."""

    folder: Path
    config: SteerTrainConfig
    policy: DistilledPolicy
    #: sha256 of the policy's files (the run key includes it).
    policy_digest: str
    #: Game seeds the training states came from, and the view texts it trained on.
    state_seeds: frozenset[int]
    record_texts: frozenset[str]

    @property
    def seeds(self) -> range:
        return range(self.config.seed, self.config.seed + self.config.games)


def load_trained(folder: str | Path, embedder: TextEmbedder | None = None) -> TrainedRun:
    """A `steer-train` output folder, checked: a clear error naming what is missing."""
    root = check_in_dir(folder, "--policy")
    if not root.is_dir():
        raise RunDirError(f"--policy: {root} does not exist; give a `werewolf steer-train` "
                          "output folder")
    summary = root / TRAIN_SUMMARY
    if not summary.is_file():
        raise RunDirError(f"--policy: {root} holds no {TRAIN_SUMMARY}; give the --out folder of"
                          " a finished `gtsteer werewolf steer-train` run")
    if not (root / POLICY_DIR).is_dir():
        raise RunDirError(f"--policy: {root} holds no {POLICY_DIR}/ (a steer-train run killed "
                          "before training?)")
    config = SteerTrainConfig.model_validate(json.loads(summary.read_text())["config"])
    if UNSTEERED not in config.styles or len(config.styles) < 3:
        raise ValueError(f"--policy: its playstyle game's styles {config.styles} need "
                         f"{UNSTEERED!r} (the baseline) and two playstyles (uniform's support)")
    policy = DistilledPolicy.load(root / POLICY_DIR, embedder)
    missing = [s for s in config.styles if s not in policy.actions]
    if missing:
        raise ValueError(f"--policy: the policy's actions {policy.actions} lack the styles "
                         f"{missing} of its playstyle game")
    digest = hashlib.sha256()
    for path in sorted((root / POLICY_DIR).iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    seeds: set[int] = set()
    states = root / "states.jsonl"
    if states.is_file():
        for line in states.read_text().splitlines():
            if line.strip():
                seeds.add(int(json.loads(line)["seed"]))
    texts: set[str] = set()
    records = root / "records.jsonl"
    if records.is_file():
        for line in records.read_text().splitlines():
            if line.strip():
                texts.add(json.loads(line)["text"])
    return TrainedRun(root, config, policy, digest.hexdigest(), frozenset(seeds),
                      frozenset(texts))


def resolve(config: SteerHeldoutConfig, trained: TrainedRun) -> SteerHeldoutConfig:
    """`config` with `seed`, `llm` and `max_games` filled in, its seeds checked against the
    training run's."""
    seed = config.seed if config.seed is not None else trained.seeds.stop
    max_games = config.max_games or 4 * math.ceil(config.states / config.per_game) + 4
    out = config.model_copy(update={"seed": seed, "max_games": max_games,
                                    "llm": config.llm or trained.config.llm})
    clash = sorted(set(trained.seeds) & set(range(seed, seed + max_games)))
    if clash:
        raise HeldOutOverlapError(
            f"--seed {seed}: held-out games {seed}..{seed + max_games - 1} would replay the "
            f"training games of seeds {clash[0]}..{clash[-1]} ({trained.folder} played seeds "
            f"{trained.seeds.start}..{trained.seeds.stop - 1}); pass --seed "
            f"{trained.seeds.stop} or more, or leave it out")
    return out


def run_key(config: SteerHeldoutConfig, trained: TrainedRun) -> str:
    """What a saved row or state list must have been made with to be kept: the training
    settings, the policy's files and every resolved setting but `states`, `max_games` and the
    folder's name."""
    return digest_key(json.dumps({
        "train": trained.config.model_dump(mode="json"), "policy": trained.policy_digest,
        "heldout": config.model_dump(mode="json", exclude={"states", "max_games", "policy"})},
        sort_keys=True))


# ---- held-out states ------------------------------------------------------------------------


def heldout_setup(config: SteerHeldoutConfig, train: SteerTrainConfig, g: int,
                  completion_style: bool | None) -> GameSetup:
    """Held-out game g: the training games' size, days and model, dealt from seed + g."""
    assert config.seed is not None and config.llm is not None
    seed = config.seed + g
    return GameSetup(f"heldout-{seed}", seed, train.players, config.llm, train.max_days,
                     train.max_messages, completion_style)


def pick_of_game(candidates: Sequence[GameState], game_seed: int, per_game: int
                 ) -> list[GameState]:
    """At most `per_game` of one game's eligible turns, drawn with that game's seed (so a
    game's picks do not depend on how many states are asked for), in the game's order."""
    if len(candidates) <= per_game:
        return list(candidates)
    chosen = random.Random(f"steer-heldout-{game_seed}").sample(range(len(candidates)),
                                                                per_game)
    return [candidates[i] for i in sorted(chosen)]


def root_view(state: GameState, train: SteerTrainConfig) -> str:
    """The first speaker's view at the root of `state`'s playstyle game (the policies' input);
    building the game makes no model call."""
    game = PlaystyleGame(state, LLMPool(), game_config(train))
    return game.new_initial_state().information_state_string(0)


def check_held_out(states: Sequence[GameState], trained: TrainedRun) -> None:
    """Every state's game and first view are outside the training run (else an error)."""
    for state in states:
        if state.seed in trained.state_seeds or state.seed in trained.seeds:
            raise HeldOutOverlapError(
                f"held-out state {state.game_id} step {state.step}: its game's seed "
                f"{state.seed} is a training game's ({trained.folder}); pass another --seed")
        if root_view(state, trained.config) in trained.record_texts:
            raise HeldOutOverlapError(
                f"held-out state {state.game_id} step {state.step}: its first speaker's view "
                f"is a text the policy was trained on ({trained.folder}/records.jsonl)")


class SavedState(BaseModel):
    """A line of `states.jsonl`: a picked held-out state with its run key."""

    run_key: str
    state: GameState


# ---- one state -------------------------------------------------------------------------------


def distilled_strategy(policy: DistilledPolicy, styles: Sequence[str]) -> Strategy:
    """The distilled policy as a strategy: its distribution over `styles` from the embedding
    of the acting player's view (the text the live hook reads)."""
    names = list(styles)

    def strategy(state: pyspiel.State) -> list[tuple[int, float]]:
        probs = policy.probs_for(hook_policy_input(state.information_state_string()),
                                 actions=names)
        return [(names.index(s), p) for s, p in probs.items()]

    return strategy


def opening_values(game: pyspiel.Game, player: int, others: Sequence[Strategy]
                   ) -> dict[int, float]:
    """`player`'s value for each action at its decision at the root of `game` (the others
    on `others`; at its later decisions, if any, `others[player]`): the numbers every
    opening policy's value is a mixture of, so a saved row recomputes any policy's value.
    Refused unless `player` acts at the root."""
    root = game.new_initial_state()
    if root.is_chance_node() or root.current_player() != player:
        raise ValueError(f"player {player} does not act at the root of {game}")
    out = {}
    for action in root.legal_actions():
        def at_root(state: pyspiel.State, a: int = action) -> list[tuple[int, float]]:
            return [(a, 1.0)] if not state.history() else others[player](state)

        out[action] = value_of(game, player, at_root, others)
    return out


def measure_state(state: GameState, index: int, key: str, pool: LLMPool, trained: TrainedRun,
                  policy: DistilledPolicy | None = None) -> FreshStateRow:
    """Solve `state`'s playstyle game, build its fresh-sample twin and compare the policies
    with the baselines at the first speaker's opening on both trees."""
    start = time.perf_counter()
    train = trained.config
    solved, result, info = solve_playstyle(state, pool, train)
    offset = train.num_llm_seeds
    fresh = PlaystyleGame(state, pool, game_config(train), sample_offset=offset)
    view = solved.new_initial_state().information_state_string(0)
    if fresh.new_initial_state().information_state_string(0) != view:
        raise RuntimeError(f"state {state.game_id} step {state.step}: the fresh game's opening "
                           "view differs from the solved one (the CFR policy cannot be "
                           "replayed exactly)")
    styles = list(train.styles)
    unsteered = styles.index(UNSTEERED)
    n = len(solved.speakers)
    others: list[Strategy] = [fixed([unsteered] * n)] * n
    policies = {"cfr": tabular(result.policy),
                "distilled": distilled_strategy(policy or trained.policy, styles)}
    baselines = {UNSTEERED: fixed([unsteered] * n),
                 "uniform": uniform([i for i, s in enumerate(styles) if s != UNSTEERED])}
    fresh_values = opening_values(fresh, 0, others)
    versus = paired_versus(fresh, 0, policies, baselines, others, UNSTEERED)
    in_sample = opening_values(solved, 0, others)
    versus_in = paired_versus(solved, 0, policies, baselines, others, UNSTEERED)
    root = solved.new_initial_state()
    return FreshStateRow(
        run_key=key, index=index, game_id=state.game_id, game_seed=state.seed, step=state.step,
        day=state.day, speakers=solved.speakers, teams=solved.teams,
        role=solved.root.player(solved.speakers[0]).role.value, styles=styles,
        sample_offset=offset, view_sha256=hashlib.sha256(view.encode()).hexdigest(),
        cfr={styles[a]: p for a, p in policies["cfr"](root) if p > 0.0},
        distilled={styles[a]: p for a, p in policies["distilled"](root)},
        in_sample={styles[a]: v for a, v in in_sample.items()},
        fresh={styles[a]: v for a, v in fresh_values.items()},
        versus=versus, versus_in_sample=versus_in, solved=info,
        fresh_message_calls=len(fresh.calls),
        fresh_prediction_calls=fresh.prediction_calls,
        seconds=time.perf_counter() - start)


@dataclass(frozen=True)
class FreshJob:
    """One held-out state to measure: the unit of work (serial: the policy travels as an
    object)."""

    state: GameState
    index: int
    key: str
    trained: TrainedRun
    completion_style: bool | None = None


def measure_job(job: FreshJob, model: LLM) -> FreshStateRow:
    return measure_state(job.state, job.index, job.key,
                         game_pool(model, job.completion_style), job.trained)


def read_rows(root: str | Path, key: str) -> list[FreshStateRow]:
    """The rows of the run with `key` under `root/rows/`, in order (`--render-only`); a row
    that cannot be read is refused by name (DamagedFileError), as every interval needs it."""
    folder = Path(root) / ROWS_DIR
    if not folder.is_dir():
        raise RunDirError(f"--out: {root} holds no {ROWS_DIR}/ (run the measurement first)")
    rows = []
    for path in sorted(folder.glob("*.json"), key=lambda p: int(p.stem)):
        try:
            rows.append(read_result(path, FreshStateRow))
        except DamagedFileError as exc:
            raise DamagedFileError(f"{exc}; `--resume` measures that state again") from None
    return [r for r in rows if r.run_key == key]


# ---- the run ---------------------------------------------------------------------------------


class SteerHeldoutOptions(BaseModel):
    """`python -m lab werewolf-heldout`'s options beyond its recorded settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Keep the rows (and picked states) of an earlier run with the same key (`--resume`).
    resume: bool = False
    #: The command line, quoted in the doc section.
    command: str = ""


def run(config: SteerHeldoutConfig, ctx: RunContext, options: SteerHeldoutOptions
        ) -> SteerHeldoutSummary:
    """`python -m lab werewolf-heldout`: held-out states, solved in-sample and measured on
    fresh samples; writes `ctx.out` (required): `rows/<i>.json`, `states.jsonl`,
    `games.sqlite` (when games were played) and `steer_heldout.json`."""
    if ctx.out is None:
        raise ValueError("--out: give the folder of the run")
    t0 = time.perf_counter()
    trained = load_trained(config.policy, ctx.given("embedder"))  # a `TextEmbedder` or None
    cfg = resolve(config, trained)
    assert cfg.llm is not None and cfg.seed is not None and cfg.max_games is not None
    pool = ctx.pool(cfg.llm)
    key = run_key(cfg, trained)
    ledger = Ledger.open(ctx.out, ROWS_DIR, key, FreshStateRow, resume=options.resume,
                         summary=SUMMARY_FILE)
    root = ledger.folder.parent
    saved, damaged = read_lines(root / STATES_FILE, key, SavedState)
    picked = [s.state for s in saved] if options.resume and not damaged else []
    model = driver_model(pool, cfg.llm)
    calls = LLMCalls()
    candidates: int | None = None
    if len(picked) < cfg.states:
        picked, candidates, game_calls, seeds = play_heldout_games(
            cfg, trained.config, root, pool, model, ctx.executor.quiet)
        calls = calls + game_calls
        write_lines(root / STATES_FILE, (SavedState(run_key=key, state=s) for s in picked))
    else:
        seeds = sorted({s.seed for s in picked})
    picked = picked[:cfg.states]
    check_held_out(picked, trained)
    kept = ledger.prefix(len(picked), lambda i, row: (row.index, row.game_id, row.step) == (
        i, picked[i].game_id, picked[i].step)) if options.resume else []
    drop_from(ledger, len(kept))  # another run's, or past a gap
    advance = shown.counter("held-out states (CFR+ in-sample, fresh samples)", len(picked),
                            len(kept))
    rows = list(kept)

    def write(i: int, row: FreshStateRow) -> None:
        ledger.add(row.index, row)
        rows.append(row)
        advance()

    jobs = [FreshJob(s, i, key, trained, pool.force_completion)
            for i, s in enumerate(picked) if i >= len(kept)]
    units = ctx.executor.quiet.run(measure_job, jobs, model, on_result=InOrder(write),
                                   label="held-out states")
    calls = calls + units.calls
    summary = SteerHeldoutSummary(
        config=cfg, train=trained.config, run_key=key, train_seeds=list(trained.seeds),
        heldout_seeds=seeds, candidate_states=candidates,
        stats=gain_stats(rows), shortfall=shortfall(cfg, len(rows)), model_calls=calls,
        command=options.command, seconds=time.perf_counter() - t0,
        finished=f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    finish_run_dir(root, SUMMARY_FILE, summary)
    return summary.written_to(root)


def play_heldout_games(cfg: SteerHeldoutConfig, train: SteerTrainConfig, root: Path,
                       pool: LLMPool, model: LLM, executor: Executor
                       ) -> tuple[list[GameState], int, LLMCalls, list[int]]:
    """Held-out games, one at a time, until they hold `cfg.states` picks (or `max_games`
    are played): the picked states, the eligible turns seen, the games' calls, their seeds."""
    assert cfg.max_games is not None
    store = GameStore.fresh(root / GAMES_DB)  # rebuilt from the games, in order
    picked: list[GameState] = []
    candidates, calls, seeds = 0, LLMCalls(), []
    try:
        for g in range(cfg.max_games):
            if len(picked) >= cfg.states:
                break
            setup = heldout_setup(cfg, train, g, pool.force_completion)
            played = executor.run(play_game, [setup], model, label="held-out games")
            calls = calls + played.calls
            played.values[0].write_to(store)
            seeds.append(setup.seed)
            turns = logged_discussion_states(store, setup.game_id, train.max_speakers)
            candidates += len(turns)
            picked += pick_of_game(turns, setup.seed, cfg.per_game)
            shown.step("held-out games", g + 1, max(g + 1, math.ceil(cfg.states / cfg.per_game)))
    finally:
        store.close()
    return picked, candidates, calls, seeds


def shortfall(cfg: SteerHeldoutConfig, measured: int) -> str:
    """A sentence when the held-out games held fewer states than asked for."""
    if measured >= cfg.states:
        return ""
    return (f"{cfg.max_games} held-out games held only {measured} eligible states at "
            f"{cfg.per_game} per game (asked for {cfg.states}): pass --max-games or "
            "--per-game higher")
