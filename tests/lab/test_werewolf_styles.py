"""`python -m lab werewolf-styles` (issue 43, item 1): do the playstyles change what a bot says?

The labelled Werewolf lines and the judge's validation on them (fake models; the real judge in
the one slow test), the statistics on known rows, the command end to end on the fake model,
its resume (a killed run rerun gives the same rows and makes no model call twice), and its
errors.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_support import lab
from scipy import stats
from typer.testing import CliRunner

from gtsteer.evals.classifiers import LoglikClassifier, make_classifier
from gtsteer.evals.prompts import DEFINED, PLAIN, options_of
from gtsteer.evals.validation import labelled_for
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion, ResponseCache
from gtsteer.llm.backends.fake import FakeBackend
from gtsteer.runs import eval_judge
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import STYLE_SPACE, JudgeOptions, load_labelled
from gtsteer.runs.werewolf_steer import logged_discussion_states, pick_states
from gtsteer.werewolf.engine import pending
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.playstyles import PLAYSTYLE_NAMES, STYLE_OPTIONS, UNSTEERED
from gtsteer.werewolf.steer_game import sample_line
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.style_lines import LABEL_KEY, NEUTRAL, READINGS
from lab.__main__ import main as lab_main
from lab.bench.benchdoc import ROOT, repo_relative
from lab.studies.werewolf_styles import (
    DEFAULT_LABELLED,
    ROWS_FILE,
    StylesConfig,
    StylesError,
    StylesOptions,
    StylesSummary,
    run,
    validate_judge,
)
from lab.studies.werewolf_styles_doc import command_of, section_name
from lab.studies.werewolf_styles_stats import StyleLine, named_players, paired, summarise, words

runner = CliRunner()
_LINE = re.compile(r'Message from [^:]+: "(.*)"')
#: A tiny run on the fake model: one logged 5-player day, three of its states.
TINY: dict[str, Any] = {"llm": "fake", "judge": "fake", "states": 3, "games": 1, "players": 5,
                        "max_messages": 3, "max_days": 1}
TINY_FLAGS = ["--llm", "fake", "--judge", "fake", "--states", "3", "--games", "1",
              "--players", "5", "--max-messages", "3", "--max-days", "1"]


def labelled_truth() -> dict[str, str]:
    entry = load_labelled(DEFAULT_LABELLED).configs[STYLE_SPACE.name]
    return {line: value for value, lines in entry.labels[LABEL_KEY].items() for line in lines}


# ---- the labelled lines and the readings ------------------------------------------------------


def test_the_readings_are_the_six_styles_and_neutral() -> None:
    assert tuple(READINGS) == (*PLAYSTYLE_NAMES, NEUTRAL)
    assert options_of(STYLE_SPACE, LABEL_KEY) == list(READINGS)
    assert STYLE_SPACE.instruction_definitions[LABEL_KEY] == READINGS


def test_the_labelled_set_covers_every_reading_with_distinct_hand_written_lines() -> None:
    labelled = load_labelled(DEFAULT_LABELLED)
    entry = labelled_for(STYLE_SPACE, labelled)  # raises unless the values are the readings
    assert entry is not None and entry.speaker == "Greta"
    lines = entry.labels[LABEL_KEY]
    assert sorted(lines) == sorted(READINGS)
    assert all(len(v) >= 8 for v in lines.values())
    every = [line for v in lines.values() for line in v]
    assert len(every) == len(set(every)) == 70
    for style, mine in lines.items():  # a judge has to read the line, not spot its label
        assert not any(style.replace("_", " ") in m.lower() or style in m for m in mine)
    # quiet lines are short; the accusing ones all name someone
    assert max(words(m) for m in lines["quiet_observer"]) <= 12
    cast = ["Alice", "Bram", "Clara", "Dmitri", "Elin", "Finn", "Hugo", "Ines", "Jonas", "Kaja",
            "Lukas"]
    assert all(named_players(m, cast) for m in lines["aggressive_provoker"])


def test_a_labelled_set_missing_a_reading_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_LABELLED.read_text())
    del data["configs"]["werewolf_playstyle"]["labels"]["playstyle"]["trickster"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"werewolf_playstyle\.playstyle: values .* do not"):
        labelled_for(STYLE_SPACE, load_labelled(bad))


def test_words_and_named_players() -> None:
    assert words("Hugo, you voted for Clara. Don't lie!") == 7
    assert words("") == 0
    names = ["Finn", "Ann", "Bo"]
    assert named_players("finn and ANN met; Finnish bread, Annie, Bo.", names) == \
        ["Finn", "Ann", "Bo"]
    assert named_players("Finnish bread for Annie", names) == []


# ---- the judge on the labelled lines (fake models) ------------------------------------------


class ReadingOracle(Backend):
    """Scores each labelled line's reading 0 and every other option -5, except that lines
    labelled `swap[0]` are read as `swap[1]`. Content-free lines score 0 everywhere."""

    kind = "reading-oracle"
    max_concurrency = 16

    def __init__(self, swap: tuple[str, str] | None = None) -> None:
        super().__init__(f"reading-oracle-{swap}")  # part of every cache key
        self.truth, self.swap = labelled_truth(), swap

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        return RawCompletion(text="Hello.")

    async def score_options(self, request: GenerationRequest,
                            options: list[str]) -> dict[str, float] | None:
        label = self.truth.get(_LINE.search(request.as_text()).group(1))
        if self.swap and label == self.swap[0]:
            label = self.swap[1]
        return {o: 0.0 if label is None or o == label else -5.0 for o in options}


def oracle(**kwargs: Any) -> LoglikClassifier:
    backend = ReadingOracle(**kwargs)
    return LoglikClassifier(LLM(backend.model, backend=backend))


def test_validation_counts_accuracy_and_confusion_on_the_labelled_lines() -> None:
    plain, defined = validate_judge(oracle())
    assert (plain.variant, defined.variant) == (PLAIN, DEFINED)
    assert plain.config == "werewolf_playstyle" and plain.key == LABEL_KEY
    assert (plain.accuracy.correct, plain.accuracy.n, plain.passes) == (70, 70, True)
    assert plain.chance == pytest.approx(1 / 7) and plain.values == list(READINGS)
    assert plain.counts == [[10 * (i == j) for j in range(7)] for i in range(7)]

    # Aggressive lines read as rule-breaking: that row moves to that column, nothing else.
    plain, _ = validate_judge(oracle(swap=("aggressive_provoker", "rule_breaker")))
    a, r = list(READINGS).index("aggressive_provoker"), list(READINGS).index("rule_breaker")
    assert plain.counts[a] == [10 * (j == r) for j in range(7)]
    assert sum(plain.counts[i][i] for i in range(7)) == plain.accuracy.correct == 60
    low, high = stats.binomtest(60, 70).proportion_ci(0.95, method="wilson")
    assert (plain.accuracy.ci_low, plain.accuracy.ci_high) == pytest.approx((low, high))
    by_value = {p.value: p.accuracy.correct for p in plain.per_value}
    assert by_value["aggressive_provoker"] == 0 and by_value["balanced"] == 10
    assert plain.passes  # 60/70 lies far above 1/7


def test_the_plain_fake_model_is_read_as_a_judge_and_refused() -> None:
    found = validate_judge(make_classifier("fake"))
    assert [v.variant for v in found] == [PLAIN, DEFINED]
    for v in found:
        assert v.accuracy.n == 70 and sum(map(sum, v.counts)) == 70
        assert not v.passes  # a hash of the prompt is no reader
        assert "vs chance 14%" in v.describe()


def test_eval_judge_validates_the_style_readings_the_same_way(tmp_path: Path) -> None:
    report = eval_judge.run(["werewolf_playstyle"], RunContext.of(out=tmp_path, progress=False),
                            JudgeOptions(judges=["fake"], labelled=DEFAULT_LABELLED))
    assert report.validations == validate_judge(make_classifier("fake"))
    # the repository's other labelled file has no lines of it: named, not an error
    report = eval_judge.run(["werewolf_playstyle"], RunContext.of(out=tmp_path, progress=False),
                            JudgeOptions(judges=["fake"]))
    assert report.validations == [] and "no labelled messages" in report.skipped[0]


@pytest.mark.slow
def test_the_default_judge_reads_werewolf_styles_above_chance() -> None:
    """The judge `python -m lab werewolf-styles` uses by default (MiniLM embeddings, the one judge
    tried whose readings count): with the readings' definitions its Wilson interval lies above
    chance on the labelled lines (17 of 70 when measured, chance 1/7; 15 would fail)."""
    assert StylesConfig().judge == "embed"
    found = {v.variant: v for v in validate_judge(make_classifier(StylesConfig().judge))}
    defined = found["definitions"]
    assert defined.passes, defined.describe()
    assert defined.accuracy.n == 70 and defined.accuracy.correct >= 16


# ---- the statistics on known rows --------------------------------------------------------------


def row(state: int, style: str, n_words: int, names: bool, plain: str,
        defined: str = NEUTRAL, sample: int = 0) -> StyleLine:
    return StyleLine(key="k", state=state, game_id="g", step=state, day=1, speaker="Ann",
                     team="village", style=style, sample=sample, text="x", words=n_words,
                     named=["Ben"] if names else [], named_living=["Ben"] if names else [],
                     reads={PLAIN: plain, DEFINED: defined}, reads_uncalibrated={}, scores={},
                     calls=1)


AGG, QUIET = "aggressive_provoker", "quiet_observer"
#: Four states; per state (words, names, plain reading) under unsteered, aggressive, quiet.
KNOWN = {
    0: ((10, False, NEUTRAL), (14, True, AGG), (4, False, QUIET)),
    1: ((12, False, NEUTRAL), (15, True, AGG), (5, False, QUIET)),
    2: ((9, True, AGG), (13, True, AGG), (5, False, QUIET)),
    3: ((11, False, NEUTRAL), (12, False, NEUTRAL), (6, True, QUIET)),
}


def known_rows() -> list[StyleLine]:
    return [row(s, style, *values)
            for s, per in KNOWN.items()
            for style, values in zip((UNSTEERED, AGG, QUIET), per, strict=True)]


def t95(values: list[float]) -> tuple[float, float]:
    m, se = sum(values) / len(values), stats.sem(values)
    h = stats.t.ppf(0.975, len(values) - 1) * se
    return m - h, m + h


def test_statistics_on_known_rows() -> None:
    styles = [AGG, QUIET, UNSTEERED]
    unsteered, results, confusion, moved = summarise(known_rows(), styles, validated=[PLAIN])
    agg, quiet = results
    assert [r.style for r in results] == [AGG, QUIET]
    # unsteered: words 10, 12, 9, 11; one line of four names someone; read neutral 3 of 4
    assert unsteered.lines == 4 and unsteered.words.mean == pytest.approx(10.5)
    assert (unsteered.names.correct, unsteered.names.n) == (1, 4)
    assert unsteered.reads[PLAIN][NEUTRAL] == pytest.approx(0.75)
    assert unsteered.reads[DEFINED][NEUTRAL] == pytest.approx(1.0)

    # words, paired per state: aggressive +4 +3 +4 +1, quiet -6 -7 -4 -5
    assert agg.words_paired.diff.mean == pytest.approx(3.0)
    assert (agg.words_paired.diff.ci_low, agg.words_paired.diff.ci_high) == \
        pytest.approx(t95([4, 3, 4, 1]))
    assert quiet.words_paired.diff.mean == pytest.approx(-5.5)
    assert quiet.words_paired.moved and quiet.words_paired.diff.ci_high < 0
    # names: aggressive 3/4 against 1/4 unsteered; discordant pairs 2 (only aggressive) vs 0
    assert (agg.names.correct, agg.names.n) == (3, 4)
    p = agg.names_paired
    assert (p.style_only, p.unsteered_only) == (2, 0)
    assert p.mcnemar_p == pytest.approx(stats.binomtest(2, 2, 0.5).pvalue)
    assert p.diff.mean == pytest.approx(0.5)
    assert (p.diff.ci_low, p.diff.ci_high) == pytest.approx(t95([1, 1, 0, 0]))

    # the judge: aggressive lines read as aggressive 3/4, unsteered ones 1/4
    plain = next(m for m in agg.judge if m.variant == PLAIN)
    assert (plain.own.correct, plain.own.n, plain.base.correct) == (3, 4, 1)
    assert plain.chance == pytest.approx(1 / 7) and plain.validated
    assert plain.p_above_chance == pytest.approx(
        stats.binomtest(3, 4, 1 / 7, alternative="greater").pvalue)
    low, high = stats.binomtest(3, 4).proportion_ci(0.95, method="wilson")
    assert (plain.own.ci_low, plain.own.ci_high) == pytest.approx((low, high))
    assert (plain.paired.style_only, plain.paired.unsteered_only) == (2, 0)
    # quiet read as quiet 4/4 against 0/4 unsteered: every pair differs, the interval is [1, 1]
    q = next(m for m in quiet.judge if m.variant == PLAIN)
    assert q.paired.diff.mean == pytest.approx(1.0) and q.paired.moved
    assert (q.paired.style_only, q.paired.unsteered_only) == (4, 0)
    assert q.paired.mcnemar_p == pytest.approx(0.125)
    assert not next(m for m in quiet.judge if m.variant == DEFINED).validated

    # confusion: the rows are the styles in the given order, the columns the readings
    plain_confusion = next(c for c in confusion if c.of == PLAIN)
    assert plain_confusion.rows == styles and plain_confusion.columns == list(READINGS)
    col = list(READINGS).index
    assert plain_confusion.counts[0][col(AGG)] == 3
    assert plain_confusion.counts[2][col(NEUTRAL)] == 3 and plain_confusion.counts[2][col(AGG)] == 1

    # what moved (intervals excluding 0): both styles' words (+4 +3 +4 +1; -6 -7 -4 -5) and
    # quiet read as quiet in the validated variant; aggressive's names and readings (+1 +1 0 0)
    # hold 0 over four states
    assert not p.moved and not plain.paired.moved
    assert moved == [f"{AGG}: words", f"{QUIET}: words", f"{QUIET}: read as {QUIET} (plain)"]


def test_a_judge_measure_counts_only_in_a_validated_variant() -> None:
    _, results, _, moved = summarise(known_rows(), [AGG, QUIET, UNSTEERED], validated=[])
    assert moved == [f"{AGG}: words", f"{QUIET}: words"]
    assert not any(m.validated for r in results for m in r.judge)


def test_samples_are_averaged_within_a_state_before_the_interval() -> None:
    rows = [row(0, UNSTEERED, 10, False, NEUTRAL, sample=0),
            row(0, UNSTEERED, 10, False, NEUTRAL, sample=1),
            row(0, AGG, 14, False, NEUTRAL, sample=0), row(0, AGG, 10, False, NEUTRAL, sample=1),
            row(1, UNSTEERED, 8, False, NEUTRAL), row(1, AGG, 8, False, NEUTRAL)]
    diff = paired(rows, AGG, lambda r: r.words).diff
    assert diff.n == 2 and diff.mean == pytest.approx(1.0)  # state 0: (4 + 0) / 2, state 1: 0
    nothing = paired(rows, AGG, lambda r: bool(r.named_living), binary=True)
    assert nothing.diff.mean == 0 and nothing.mcnemar_p == 1.0 and not nothing.moved


# ---- the command on the fake model --------------------------------------------------------------


class Killed(BaseException):
    """Stands in for the process being killed: no `except Exception` stops it."""


class CountingFake(Backend):
    """The fake model, counting its calls and its text completions; raises `Killed` at text
    completion `kill_at` (None: never). Lines are sampled one call at a time, so a kill there
    leaves no other call in flight (the judge's calls run concurrently: a kill among them would
    lose the unfinished ones, as a real kill does)."""

    kind = "fake"
    max_concurrency = 1
    supports_grammar = True

    def __init__(self, kill_at: int | None = None):
        super().__init__("fake")
        self.inner = FakeBackend()
        self.calls = self.completions = 0
        self.kill_at = kill_at

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()  # the same cache entries as the plain fake

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        self.calls += 1
        self.completions += 1
        if self.kill_at is not None and self.completions >= self.kill_at:
            raise Killed
        return await self.inner.complete(request, json_schema)

    async def score_options(self, request: GenerationRequest,
                            options: list[str]) -> dict[str, float] | None:
        self.calls += 1
        return await self.inner.score_options(request, options)


def measure(out: Path, cache: Path, backend: CountingFake, **config: Any) -> StylesSummary:
    """A run whose writer and judge both call `backend` (two clients: the pool wraps its own)."""
    writer = LLM("fake", backend=backend, cache=ResponseCache(cache))
    judge = LLM("fake", backend=backend, cache=ResponseCache(cache))
    return run(StylesConfig(**{**TINY, **config}),
               RunContext.of(out=out, progress=False, reader=LoglikClassifier(judge),
                             pool=LLMPool(factory=lambda _name: writer)), StylesOptions())


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / ROWS_FILE).read_text().splitlines()]


def test_the_command_samples_live_lines_at_steer_train_states(tmp_path: Path) -> None:
    summary = measure(tmp_path / "run", tmp_path / "cache", CountingFake())
    out = tmp_path / "run"
    assert summary.states == 3 and summary.lines == 3 * len(STYLE_OPTIONS)
    assert {p.name for p in out.iterdir()} >= {"styles.json", "lines.jsonl", "states.jsonl",
                                               "run.json", "judge.json", "games.sqlite"}
    assert not (out / "IN_PROGRESS").exists()
    assert StylesSummary.model_validate_json((out / "styles.json").read_text()) == summary

    # the states are steer-train's draw from the same logged games
    store = GameStore(out / "games.sqlite")
    candidates = logged_discussion_states(store, "steer-0-0", 2)
    expected = pick_states(candidates, 3, 0)
    states = [json.loads(line) for line in (out / "states.jsonl").read_text().splitlines()]
    assert [(s["game_id"], s["step"]) for s in states] == \
        [(s.game_id, s.step) for s in expected]

    # every line is the live bot's line under that style (sample 0 = the live decision)
    rows = rows_of(out)
    assert [(r["state"], r["style"]) for r in rows] == \
        [(i, s) for i in range(3) for s in STYLE_OPTIONS]
    pool = LLMPool(factory=lambda _name: LLM("fake"))
    for r in rows:
        state = expected[r["state"]]
        want = pending(state)
        decision, _ = sample_line(state, want, pool, r["style"], 0)
        assert (r["speaker"], r["text"]) == (want.actor, decision.text)
        assert r["words"] == words(r["text"]) and set(r["reads"]) == {PLAIN, DEFINED}
        assert all(v in READINGS for v in r["reads"].values())
    # the fake judge fails validation, so no reading counts: only the proxies can move
    assert summary.validated == [] and len(summary.validations) == 2
    assert all(not m.startswith("read as") for m in summary.moved)
    assert [s.style for s in summary.styles] == list(PLAYSTYLE_NAMES)


def test_a_killed_run_resumes_with_the_same_rows_and_no_call_twice(tmp_path: Path) -> None:
    whole = CountingFake()
    expected = measure(tmp_path / "whole", tmp_path / "cache-whole", whole)
    full_rows = rows_of(tmp_path / "whole")

    out, cache = tmp_path / "resumed", tmp_path / "cache-resumed"
    first = CountingFake(kill_at=whole.completions - 3)  # dies in the last state's lines
    with pytest.raises(Killed):
        measure(out, cache, first)
    kept = rows_of(out)
    assert 0 < len(kept) < len(full_rows) and kept == full_rows[:len(kept)]
    assert (out / "IN_PROGRESS").exists() and not (out / "styles.json").exists()

    second = CountingFake()
    resumed = measure(out, cache, second)
    assert (first.calls - 1) + second.calls == whole.calls  # nothing asked twice
    assert rows_of(out) == full_rows
    assert resumed.model_dump(exclude={"llm_calls", "seconds", "finished_at"}) == \
        expected.model_dump(exclude={"llm_calls", "seconds", "finished_at"})

    third = CountingFake()  # a finished run: every row kept, the judge check from the cache
    again = measure(out, cache, third)
    assert third.calls == 0 and again.lines == expected.lines and rows_of(out) == full_rows


def test_other_settings_keep_no_rows(tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    measure(out, cache, CountingFake())
    other = measure(out, cache, CountingFake(), samples=2)
    rows = rows_of(out)
    assert other.lines == len(rows) == 3 * 2 * len(STYLE_OPTIONS)
    assert len({r["key"] for r in rows}) == 1
    # sample 0 is the same line as before; sample 1 varies the seed
    assert {r["sample"] for r in rows} == {0, 1}


def test_run_files_name_the_labelled_set_relative_to_the_repository(tmp_path: Path) -> None:
    """The same text from main or from a frozen worktree (the default path is absolute)."""
    out = tmp_path / "run"
    summary = measure(out, tmp_path / "cache", CountingFake(), styles=[AGG, UNSTEERED])
    stored = {json.loads((out / name).read_text())["labelled"]
              for name in ("run.json", "judge.json", "styles.json")}
    assert stored == {summary.labelled} == {"gtsteer/data/werewolf_style_labelled.yaml"}
    assert repo_relative(ROOT / "docs" / "x.md") == "docs/x.md"
    assert repo_relative("elsewhere/x.yaml") == "elsewhere/x.yaml"
    assert repo_relative("/srv/x.yaml") == "/srv/x.yaml"


def test_states_from_a_folder_replay_the_same_lines(tmp_path: Path) -> None:
    first = tmp_path / "first"
    measure(first, tmp_path / "cache", CountingFake(), styles=[AGG, UNSTEERED])
    second = measure(tmp_path / "second", tmp_path / "cache", CountingFake(),
                     styles=[AGG, UNSTEERED], states_from=str(first), games=1)
    assert [r["text"] for r in rows_of(tmp_path / "second")] == \
        [r["text"] for r in rows_of(first)]
    assert second.states == 3 and not (tmp_path / "second" / "games.sqlite").exists()
    with pytest.raises(StylesError, match="holds only 3 states"):
        measure(tmp_path / "third", tmp_path / "cache", CountingFake(), states=5,
                states_from=str(first / "states.jsonl"))
    with pytest.raises(StylesError, match="no states file"):
        measure(tmp_path / "third", tmp_path / "cache", CountingFake(),
                states_from=str(tmp_path / "nowhere"))


def test_states_from_a_steer_heldout_folder_are_read_under_their_run_key(tmp_path: Path) -> None:
    """`steer-heldout` saves each state under "state" beside its run key: the same states."""
    first = tmp_path / "first"
    measure(first, tmp_path / "cache", CountingFake(), styles=[AGG, UNSTEERED])
    heldout = tmp_path / "heldout"
    heldout.mkdir()
    lines = (first / "states.jsonl").read_text().splitlines()
    (heldout / "states.jsonl").write_text("".join(
        json.dumps({"run_key": "k", "state": json.loads(line)}) + "\n" for line in lines))
    measure(tmp_path / "second", tmp_path / "cache", CountingFake(), styles=[AGG, UNSTEERED],
            states_from=str(heldout), games=1)
    assert [r["text"] for r in rows_of(tmp_path / "second")] == \
        [r["text"] for r in rows_of(first)]
    (heldout / "states.jsonl").write_text("{not json\n")
    with pytest.raises(StylesError, match="line 1 is not JSON"):
        measure(tmp_path / "third", tmp_path / "cache", CountingFake(), states_from=str(heldout))


def test_the_cli_writes_its_section_and_renders_it_again_without_a_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\n\ntext before\n")
    out = tmp_path / "run"
    result = runner.invoke(lab, ["werewolf-styles", *TINY_FLAGS, "--out", str(out), "--doc",
                                 str(doc)])
    assert result.exit_code == 0, result.output
    assert "moved:" in result.output and "wrote its section" in result.output
    text = doc.read_text()
    start, end = f"<!-- {section_name('fake')}:start -->", f"<!-- {section_name('fake')}:end -->"
    assert text.startswith("# Doc\n\ntext before\n") and start in text and end in text
    cfg = StylesConfig(**TINY)
    assert f"Command: `{command_of(cfg, out)}`" in text
    assert "A trial: fewer than the issue's 20 states." in text
    assert "| aggressive_provoker | 3 |" in text and "fails, its readings are not counted" in text

    # the lab renders the section again from the saved rows alone
    assert lab_main(["werewolf-styles", "--results", str(out), "--doc", str(doc)]) == 0
    assert "0 new" in capsys.readouterr().out and doc.read_text() == text


def test_render_only_says_how_many_torn_lines_it_left_out(tmp_path: Path) -> None:
    """Review 0832c41 (notes): a torn `lines.jsonl` line was dropped without a word."""
    out = tmp_path / "run"
    measure(out, tmp_path / "cache", CountingFake(), styles=[AGG, UNSTEERED])
    lines = (out / ROWS_FILE).read_text().splitlines()
    torn = lines[:-1] + [lines[-1][: len(lines[-1]) // 2]]  # a kill cut the last line
    (out / ROWS_FILE).write_text("\n".join(torn) + "\n")
    said: list[str] = []
    summary = run(StylesConfig(**TINY), RunContext.of(out=out, report=said.append),
                  StylesOptions(render_only=True))
    assert summary.lines == len(lines) - 1
    assert said == [f"--render-only: 1 line of {out / ROWS_FILE} left out (cut by a kill, or"
                    f" not this run's); the summary counts the {len(lines) - 1} kept"]


def test_command_of_names_only_what_differs_from_the_defaults() -> None:
    assert command_of(StylesConfig(), "results/s") == (
        "python -m lab werewolf-styles --llm local --judge embed --states 20 --out results/s")
    cfg = StylesConfig(llm="local:qwen2.5-coder-0.5b", samples=2, styles=[UNSTEERED, QUIET])
    assert command_of(cfg, "o") == (
        "python -m lab werewolf-styles --llm local:qwen2.5-coder-0.5b --judge embed --states 20 "
        "--samples 2 --styles quiet_observer,unsteered --out o")
    assert section_name("local:qwen2.5-coder-0.5b") == "werewolf_styles_local-qwen2.5-coder-0.5b"
    # a run at another states file gets its own section, named by the file's folder
    at = "werewolf_styles_local-qwen2.5-coder-0.5b_at-werewolf-fresh"
    assert section_name("local:qwen2.5-coder-0.5b", "docs/data/werewolf_fresh") == at
    assert section_name("local:qwen2.5-coder-0.5b", "docs/data/werewolf_fresh/states.jsonl") == at


@pytest.mark.parametrize(("flags", "message"), [
    (["--styles", "aggressive_provoker,loud,unsteered"], "unknown style(s) ['loud']"),
    (["--styles", "aggressive_provoker,quiet_observer"], "need `unsteered`"),
    (["--states", "0"], "states"),
    (["--states", "40"], "hold only"),
])
def test_bad_input_is_one_clear_error(tmp_path: Path, flags: list[str], message: str) -> None:
    result = runner.invoke(lab, ["werewolf-styles", *TINY_FLAGS, *flags,
                                 "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and message in result.output, result.output


def test_render_only_needs_a_finished_run(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = lab_main(["werewolf-styles", "--results", str(tmp_path / "none"), "--doc",
                     str(tmp_path / "doc.md")])
    assert code == 2 and "holds no finished styles run" in capsys.readouterr().err
    assert not (tmp_path / "doc.md").exists()


def test_a_summary_of_no_rows_is_not_a_crash() -> None:
    unsteered, results, _, moved = summarise([], [AGG, UNSTEERED], validated=[PLAIN])
    assert unsteered.lines == 0 and math.isnan(unsteered.words.mean)
    assert results[0].lines == 0 and moved == []


def test_the_steering_doc_holds_a_section_for_each_measured_writer() -> None:
    """docs/WEREWOLF_STEERING.md keeps one marked section per writer model the issue asks for,
    so a run replaces it in place."""
    from lab.studies.werewolf_sections import DOC

    text = DOC.read_text(encoding="utf-8")
    for llm in ("local:smollm2-135m", "local:qwen2.5-coder-0.5b"):
        name = section_name(llm)
        assert text.count(f"<!-- {name}:start -->") == text.count(f"<!-- {name}:end -->") == 1
        assert f"--llm {llm} --judge" in text.split(f"<!-- {name}:start -->")[1]


def test_a_run_writes_only_its_folder_unless_given_a_doc(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58: a run writes only into its run folder; this repository's
    docs/WEREWOLF_STEERING.md is written only where `--doc PATH` names it."""
    repo_doc = ROOT / "docs" / "WEREWOLF_STEERING.md"
    before = repo_doc.read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(lab, ["werewolf-styles", *TINY_FLAGS, "--out", "run"])
    assert result.exit_code == 0, result.output
    assert repo_doc.read_bytes() == before
    assert sorted(p.name for p in work.iterdir()) == ["run"]
    assert "section" not in result.output
