"""`python -m lab werewolf-styles` (lab/studies/werewolf_styles_command.py): do the playstyles
change what a bot says? (issue 43, item 1)

The policy a playstyle game distils can only matter if the style sentence changes the bot's
line. This run measures that directly, per writer model:

1. **States.** Logged discussion turns, from the same source and with the same draw as
   `steer-train` (`werewolf_steer.play_logged_games`, `logged_discussion_states`,
   `pick_states`): with the same settings they are the very roots a policy is trained on.
   `states_from` takes them from a `steer-train` folder's `states.jsonl` instead (its bots then
   speak with this run's model).
2. **Lines.** At each state, the bot whose turn it is speaks once under every style and under
   `unsteered` (`steer_game.sample_line`: the live context builder, reminder and cleaning, so
   sample 0 is exactly the live line), `samples` times (sample k varies only the seed).
3. **Readings.** A steering classifier (`gtsteer.evals.classifiers`, "the judge") reads each
   line as one of `gtsteer.werewolf.style_lines.READINGS` (six styles and `neutral`), in both
   variants (without and with the readings' definitions). It is first validated on
   hand-labelled lines (gtsteer/data/werewolf_style_labelled.yaml) by the code that validates
   every steering judge (`gtsteer.evals.validation`); a variant's readings count only where it
   passes (its Wilson interval above chance).
4. **Numbers per style** (`summarise`, from the saved rows alone): how often its lines read as
   that style (95% Wilson interval, one-sided exact binomial p against chance) and how often
   the unsteered lines at the same states do; the words per line and the share of lines that
   name another living player. Each against `unsteered` **paired by state**: the per-state
   difference (the mean over samples), its mean with a 95% Student-t interval over states, and
   for the yes/no measures the exact McNemar p on the discordant pairs. A style *moves* a
   measure when that interval excludes 0; `moved` lists them, and an empty list says the
   policy cannot matter on this model.

Files in OUT: `states.jsonl` (the states, as `steer-train` writes them), `run.json` (the
run's settings and key), `games.sqlite` (the logged games), `judge.json` (the validation),
`lines.jsonl` (one row per line: text, proxies, readings), `styles.json` (the summary).
Rows are a pure function of the settings (fixed seeds, cached calls), so a rerun with the same
settings keeps the finished rows and samples only the rest: a killed run resumes, and the
lines of a half-done state come from the response cache. `render_only` recomputes the summary
from the saved rows without any model.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gtsteer.binding import progress as shown
from gtsteer.binding.progress import GatherBar
from gtsteer.binding.shipped import DATA_DIR
from gtsteer.evals.classifiers import (
    SteeringClassifier,
    classifier_models,
    make_classifier,
    names_a_classifier,
)
from gtsteer.evals.prompts import VARIANTS
from gtsteer.evals.steering import Confusion
from gtsteer.evals.validation import ClassifierValidation
from gtsteer.llm import LLMCalls, run_sync
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import STYLE_SPACE, load_labelled, validate_classifier
from gtsteer.runs.ledger import digest_key
from gtsteer.runs.output import RunResult, finish_run_dir, prepare_run_dir, write_json, write_text
from gtsteer.runs.werewolf_steer import (
    SteerTrainConfig,
    logged_discussion_states,
    pick_states,
    play_logged_games,
)
from gtsteer.solvers.metrics import (
    Spelling,
)
from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import STYLE_OPTIONS, UNSTEERED
from gtsteer.werewolf.rules import MAX_PLAYERS, MIN_PLAYERS, Role
from gtsteer.werewolf.state import GameState, Pending
from gtsteer.werewolf.steer_game import sample_line
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.style_lines import LABEL_KEY, LABEL_SET
from lab.bench.benchdoc import repo_relative
from lab.studies.saved import append_lines, read_lines, write_lines
from lab.studies.werewolf_styles_stats import (
    StyleLine,
    StyleResult,
    UnsteeredResult,
    named_players,
    summarise,
    words,
)

SCHEMA_VERSION = 1
SUMMARY_FILE = "styles.json"
ROWS_FILE = "lines.jsonl"
STATES_FILE = "states.jsonl"
RUN_FILE = "run.json"
JUDGE_FILE = "judge.json"
#: The labelled lines the judge is validated on.
DEFAULT_LABELLED = DATA_DIR / "werewolf_style_labelled.yaml"
#: What the issue asks for; fewer states make a trial run, which the docs section says.
ISSUE_STATES = 20



class StylesError(ValueError):
    """Bad input to `python -m lab werewolf-styles` (names the option and the value)."""


class StylesConfig(BaseModel):
    """What is measured (recorded in `run.json` and `styles.json`)."""

    model_config = ConfigDict(extra="forbid")

    #: The writer: the model the logged games are played with and every measured line is
    #: sampled from.
    llm: str = "local"
    #: The judge's spelling (`gtsteer eval judge --judge`: a model, pairwise:MODEL, embed).
    #: MiniLM by default: on the labelled lines it is the one judge tried whose readings count
    #: (with definitions, 17/70 against chance 1/7); SmolLM2 and Qwen 0.5B read at chance
    #: (docs/WEREWOLF_STEERING.md, section 5).
    judge: str = "embed"
    states: int = Field(ISSUE_STATES, ge=1)
    #: Lines per (state, style): sample k varies only the message seed.
    samples: int = Field(1, ge=1, le=8)
    #: The styles measured; `unsteered`, the baseline every style is paired with, is required.
    styles: list[str] = Field(default_factory=lambda: list(STYLE_OPTIONS))
    #: The logged games (as `steer-train`'s defaults, so the states are its roots).
    games: int = Field(4, ge=1)
    players: int = Field(7, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    max_messages: int = Field(4, ge=1)
    max_days: int = Field(2, ge=1)
    #: A state is eligible as a playstyle game's root with this many next speakers.
    max_speakers: int = Field(2, ge=2, le=4)
    seed: int = 0
    #: A `steer-train` folder (or its `states.jsonl`) to take the states from instead.
    states_from: str | None = None

    @field_validator("styles")
    @classmethod
    def _known_styles(cls, v: list[str]) -> list[str]:
        unknown = [s for s in v if s not in STYLE_OPTIONS]
        if unknown:
            raise ValueError(f"unknown style(s) {unknown}; choose from {', '.join(STYLE_OPTIONS)}")
        if UNSTEERED not in v or len(set(v)) < 2:
            raise ValueError(f"need `{UNSTEERED}` (every style is compared with it) and at least "
                             f"one style, got {v}")
        return [s for s in STYLE_OPTIONS if s in v]  # one order, whatever was given


class StylesSummary(RunResult):
    """`styles.json`."""

    schema_version: int = SCHEMA_VERSION
    config: StylesConfig
    judge: str
    labelled: str
    validations: list[ClassifierValidation]
    #: Variants whose validation passed (their readings count).
    validated: list[str]
    states: int
    lines: int
    unsteered: UnsteeredResult
    styles: list[StyleResult]
    #: Per judge variant: lines under each style (or unsteered) read as each reading.
    confusion: list[Annotated[Confusion, Spelling(of="variant")]]
    #: "style: measure" for every measure a style moves; empty: none moves anything.
    moved: list[str]
    #: Model requests of this invocation (writer and judge): the cache's share and new calls.
    llm_calls: LLMCalls = Field(default_factory=LLMCalls)
    seconds: float = 0.0
    #: When the run that sampled the rows finished (UTC; kept by `render_only`).
    finished_at: str = ""

    @property
    def nothing_moves(self) -> bool:
        return not self.moved


class StylesOptions(BaseModel):
    """`python -m lab werewolf-styles`'s options beyond its recorded settings (`StylesConfig`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The labelled lines the judge is validated on.
    labelled: str | Path = DEFAULT_LABELLED
    #: Recompute the summary from the saved rows of OUT; no model is loaded or called.
    render_only: bool = False


# ---- the run ----------------------------------------------------------------------------------


def run_key(cfg: StylesConfig, judge: str, states_digest: str) -> str:
    """What a saved row must have been made with to be kept: every setting, the judge, and
    the states file's content when the states come from one."""
    return digest_key(f"{cfg.model_dump_json()}|{judge}|{states_digest}")


def states_path(source: str | Path) -> Path:
    """A `steer-train` folder's `states.jsonl`, or the file itself."""
    path = Path(source)
    if path.is_dir():
        path = path / STATES_FILE
    if not path.is_file():
        raise StylesError(f"--states-from: no states file {path} (give a steer-train folder or "
                          f"its {STATES_FILE})")
    return path


def read_states(path: Path, flag: str = "--states-from") -> list[GameState]:
    """The game states of a `states.jsonl`: `steer-train`'s (a state per line) or
    `steer-heldout`'s (a state under `"state"`, beside the run key that picked it)."""
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if isinstance(row, dict) and set(row) == {"run_key", "state"}:
                row = row["state"]
            out.append(GameState.model_validate(row))
        except ValidationError as exc:
            raise StylesError(f"{flag}: {path} line {i} is not a game state: "
                              f"{exc.errors()[0]['msg']}") from None
        except ValueError as exc:
            raise StylesError(f"{flag}: {path} line {i} is not JSON: {exc}") from None
    return out


def spoken_by(state: GameState, llm: str) -> GameState:
    """The state with every bot (and the router) on `llm`: lines of another model's logged
    state, sampled from this run's writer."""
    players = [p if p.human else p.model_copy(update={"model": llm}) for p in state.players]
    return state.model_copy(update={"players": players, "router_model": llm})


def speak_turn(state: GameState, where: str) -> Pending:
    want = pending(state)
    if state.phase != "discussion" or want is None or want.kind != "speak" or not want.actor:
        raise StylesError(f"{where}: game {state.game_id} step {state.step} is not a bot's "
                          f"discussion turn")
    return want


def shortfall_error(cfg: StylesConfig, candidates: int) -> StylesError:
    per_game = candidates / cfg.games
    hint = (f"pass --games {-(-cfg.states // max(1, int(per_game)))} or more"
            if per_game >= 1 else "play longer games (--max-days, --max-messages)")
    return StylesError(f"--states {cfg.states}: the {cfg.games} logged games hold only "
                       f"{candidates} eligible discussion states; {hint}, or ask for fewer")


def load_rows(path: Path, key: str, states: list[GameState], cfg: StylesConfig
              ) -> tuple[list[StyleLine], int]:
    """The saved rows of this run (same key, a known state, style and sample, first of each),
    in file order, and how many other lines the file held (then it is rewritten)."""
    seen: set[tuple[int, str, int]] = set()

    def fits(row: StyleLine) -> bool:
        ident = (row.state, row.style, row.sample)
        ok = (0 <= row.state < len(states) and row.style in cfg.styles
              and row.sample < cfg.samples and ident not in seen
              and (row.game_id, row.step) == (states[row.state].game_id,
                                              states[row.state].step))
        if ok:
            seen.add(ident)
        return ok

    return read_lines(path, key, StyleLine, fits)


def validate_judge(classifier: SteeringClassifier, labelled: str | Path = DEFAULT_LABELLED,
                   progress: bool = False) -> list[ClassifierValidation]:
    """The judge on the hand-labelled lines, per variant: `gtsteer eval judge`'s validation
    (`eval_judge.validate_classifier`, `gtsteer.evals.validation`) on `STYLE_SPACE`."""
    found = validate_classifier(STYLE_SPACE, classifier, load_labelled(labelled),
                                progress=progress)
    if not found:
        raise StylesError(f"--labelled: {labelled} has no `{LABEL_SET}` lines")
    return found


def judge_lines(classifier: SteeringClassifier, items: list[tuple[str, str]]
                ) -> dict[str, list[Any]]:
    """variant -> one `Classification` per (speaker, line)."""

    async def go() -> dict[str, list[Any]]:
        bar = GatherBar(False)
        return {v: await classifier.classify(STYLE_SPACE, LABEL_KEY, items, v, bar)
                for v in VARIANTS}

    return run_sync(go())


def line_row(key: str, index: int, state: GameState, speaker: str, style: str, sample: int,
             text: str, calls: int) -> StyleLine:
    me = state.player(speaker)
    others = [p.name for p in state.players if p.name != speaker]
    living = [n for n in state.living() if n != speaker]
    return StyleLine(
        key=key, state=index, game_id=state.game_id, step=state.step, day=state.day,
        speaker=speaker, team="werewolves" if me.role is Role.WEREWOLF else "village",
        style=style, sample=sample, text=text, words=words(text),
        named=named_players(text, others), named_living=named_players(text, living),
        reads={}, reads_uncalibrated={}, scores={}, calls=calls)


def measure_state(index: int, state: GameState, cfg: StylesConfig, pool: LLMPool,
                  classifier: SteeringClassifier, key: str, done: set[tuple[int, str, int]],
                  sample: int) -> list[StyleLine]:
    """The missing lines of one (state, sample), sampled under each style and judged."""
    want = speak_turn(state, f"state {index}")
    speaker = want.actor or ""
    rows = []
    for style in cfg.styles:
        if (index, style, sample) in done:
            continue
        decision, records = sample_line(state, want, pool, style, sample)
        rows.append(line_row(key, index, state, speaker, style, sample, decision.text,
                             len(records)))
    if not rows:
        return []
    judged = judge_lines(classifier, [(speaker, r.text) for r in rows])
    for v, found in judged.items():
        for row, c in zip(rows, found, strict=True):
            row.reads[v] = c.predicted
            row.reads_uncalibrated[v] = c.predicted_uncalibrated
            row.scores[v] = c.scores
    return rows


def build_summary(cfg: StylesConfig, judge: str, labelled: str | Path,
                  validations: list[ClassifierValidation], rows: list[StyleLine], states: int,
                  calls: LLMCalls, seconds: float) -> StylesSummary:
    validated = [v for v in VARIANTS
                 if (mine := [x for x in validations if x.variant == v])
                 and all(x.passes for x in mine)]
    unsteered, styles, confusion, moved = summarise(rows, cfg.styles, validated)
    return StylesSummary(
        config=cfg, judge=judge, labelled=repo_relative(labelled), validations=validations,
        validated=validated, states=states, lines=len(rows), unsteered=unsteered,
        styles=styles, confusion=confusion, moved=moved, llm_calls=calls,
        seconds=round(seconds, 1))


def render_only(out: Path, report: Callable[[str], None] | None = None) -> StylesSummary:
    """The summary of OUT's saved rows, with no model (`--render-only`); `report` is told
    how many lines of the rows file were left out (cut by a kill, or another run's)."""
    try:
        saved = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
        cfg = StylesConfig.model_validate(saved["config"])
        validations = [ClassifierValidation.model_validate(v) for v in
                       json.loads((out / JUDGE_FILE).read_text(encoding="utf-8"))["validations"]]
    except (OSError, ValueError, KeyError) as exc:
        raise StylesError(f"--render-only: {out} holds no finished styles run to render "
                          f"({exc})") from None
    states = read_states(out / STATES_FILE, "--render-only")
    rows, dropped = load_rows(out / ROWS_FILE, saved["key"], states, cfg)
    if dropped and report is not None:
        report(f"--render-only: {dropped} line{'s' if dropped != 1 else ''} of"
               f" {out / ROWS_FILE} left out (cut by a kill, or not this run's); the summary"
               f" counts the {len(rows)} kept")
    summary = build_summary(cfg, saved["judge"], saved["labelled"], validations,
                            rows, len(states), LLMCalls(), 0.0)
    try:  # the rows were sampled when the run finished, not now
        old = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
        summary.finished_at = str(old.get("finished_at", ""))
        summary.seconds = float(old.get("seconds", 0.0))
    except (OSError, ValueError):
        pass
    write_json(out / SUMMARY_FILE, summary)
    return summary.written_to(out)


def run(config: StylesConfig, ctx: RunContext, options: StylesOptions) -> StylesSummary:
    """`python -m lab werewolf-styles`: sample each style's line at logged discussion states, judge
    and count it (see the module docstring); writes `ctx.out` (required)."""
    if ctx.out is None:
        raise ValueError("--out: give the folder of the run")
    if options.render_only:
        return render_only(ctx.out, ctx.report)
    cfg, t0 = config, time.perf_counter()
    states_file = states_path(cfg.states_from) if cfg.states_from else None
    digest = (hashlib.sha256(states_file.read_bytes()).hexdigest() if states_file else "")
    pool = ctx.pool(cfg.llm)
    # The judge reads the lines: the reader role (a classifier object), else the config's.
    if ctx.given("reader") is not None:
        classifier = ctx.given("reader")
    elif names_a_classifier(cfg.judge):
        classifier = make_classifier(cfg.judge)
    else:
        classifier = make_classifier(ctx.endpoint.llm(cfg.judge))
    key = run_key(cfg, classifier.name, digest)
    root = prepare_run_dir(ctx.out, summary=SUMMARY_FILE)
    meters = [pool.get(cfg.llm), *classifier_models(classifier)]
    before = [m.usage for m in meters]
    states = load_states(root, cfg, key, states_file, pool)
    write_json(root / RUN_FILE, {"key": key, "config": cfg.model_dump(),
                                 "judge": classifier.name,
                                 "labelled": repo_relative(options.labelled)})
    # Its own display (one live display at a time): the labelled lines, both variants.
    validations = validate_judge(classifier, options.labelled, progress=ctx.progress)
    write_json(root / JUDGE_FILE, {"judge": classifier.name,
                                   "labelled": repo_relative(options.labelled),
                                   "validations": [v.model_dump() for v in validations]})
    rows_path = root / ROWS_FILE
    rows, dropped = load_rows(rows_path, key, states, cfg)
    if dropped:  # keep only this run's rows, whole
        write_lines(rows_path, rows)
    done = {(r.state, r.style, r.sample) for r in rows}
    total = len(states) * cfg.samples * len(cfg.styles)
    advance = shown.counter("lines (sampled and judged)", total, len(done))
    for index, state in enumerate(states):
        for sample in range(cfg.samples):
            new = measure_state(index, state, cfg, pool, classifier, key, done, sample)
            if new:
                append_lines(rows_path, new)
                rows += new
                advance(len(new))
    calls = sum((m.usage.since(b) for m, b in zip(meters, before, strict=True)), LLMCalls())
    order = {(s, st, k): i for i, (s, k, st) in enumerate(
        (s, k, st) for s in range(len(states)) for k in range(cfg.samples) for st in cfg.styles)}
    rows.sort(key=lambda r: order[(r.state, r.style, r.sample)])
    summary = build_summary(cfg, classifier.name, options.labelled, validations, rows,
                            len(states), calls, time.perf_counter() - t0)
    summary.finished_at = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    finish_run_dir(root, SUMMARY_FILE, summary)
    return summary.written_to(root)


def load_states(root: Path, cfg: StylesConfig, key: str, states_file: Path | None,
                pool: LLMPool) -> list[GameState]:
    """This run's states: those saved by a run with the same key, else drawn afresh (from
    `states_from`, or from newly logged games as `steer-train` draws them) and saved."""
    saved = root / STATES_FILE
    try:
        same = json.loads((root / RUN_FILE).read_text(encoding="utf-8"))["key"] == key
    except (OSError, ValueError, KeyError):
        same = False
    if same and saved.is_file():
        states = read_states(saved, "saved states")
        if len(states) == cfg.states:
            return states
    # Until the caller writes the new key, no later run takes these states for another's.
    (root / RUN_FILE).unlink(missing_ok=True)
    if states_file is not None:
        given = read_states(states_file)
        if len(given) < cfg.states:
            raise StylesError(f"--states {cfg.states}: {states_file} holds only {len(given)} "
                              "states; ask for fewer")
        states = [spoken_by(s, cfg.llm) for s in given[:cfg.states]]
        for i, s in enumerate(states):
            speak_turn(s, f"--states-from {states_file} line {i + 1}")
    else:
        states = logged_states(root, cfg, pool)
    write_text(saved, "".join(s.model_dump_json() + "\n" for s in states))
    return states


def logged_states(root: Path, cfg: StylesConfig, pool: LLMPool
                  ) -> list[GameState]:
    """Bot-only games logged as `steer-train` logs them, and its draw of their eligible
    discussion states; refused when they hold fewer than `cfg.states`."""
    store = GameStore.fresh(root / "games.sqlite")  # replayed from the cache: fresh logs
    try:
        logged = SteerTrainConfig(games=cfg.games, llm=cfg.llm, players=cfg.players,
                                  max_messages=cfg.max_messages, max_days=cfg.max_days,
                                  seed=cfg.seed, states=cfg.states, max_speakers=cfg.max_speakers)
        advance = shown.counter("bot-only games", cfg.games)
        ids, _ = play_logged_games(logged, store, pool, lambda _: advance())
        candidates = [s for gid in ids
                      for s in logged_discussion_states(store, gid, cfg.max_speakers)]
    finally:
        store.close()
    if len(candidates) < cfg.states:
        raise shortfall_error(cfg, len(candidates))
    return pick_states(candidates, cfg.states, cfg.seed)
