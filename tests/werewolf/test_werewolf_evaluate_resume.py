"""`werewolf evaluate` on chosen conditions, paired with static seed by seed, and resumable: a
run killed in the middle of a seed and resumed gives the games and results of one uninterrupted
run, and no model call is made twice (fake model, no Ray)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from werewolf_helpers import database, hash_embedder

from gtsteer.cli import app
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion, ResponseCache
from gtsteer.llm.backends.fake import FakeBackend
from gtsteer.runs import werewolf_evaluate, werewolf_steer
from gtsteer.runs.context import RunContext
from gtsteer.runs.werewolf_evaluate import EvaluateConfig, EvaluateOptions
from gtsteer.runs.werewolf_steer import SteerTrainConfig, SteerTrainOptions
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.steering import DistilledPlaystyleChooser

CONFIG: dict[str, Any] = {"games": 4, "llm": "fake", "players": 5, "max_messages": 2,
                          "max_days": 1,
                          "conditions": ["static", "village-steered", "wolves-steered"]}


class Killed(BaseException):
    """Stands in for the process being killed: no `except Exception` stops it."""


class CountingFake(Backend):
    """The fake model, counting its calls; raises `Killed` at call `kill_at` (None: never)."""

    kind = "fake"
    max_concurrency = 1
    supports_grammar = True

    def __init__(self, kill_at: int | None = None):
        super().__init__("fake")
        self.inner = FakeBackend()
        self.calls = 0
        self.kill_at = kill_at

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()  # the same cache entries as the plain fake

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        self.calls += 1
        if self.kill_at is not None and self.calls >= self.kill_at:
            raise Killed
        return await self.inner.complete(request, json_schema)

    async def score_options(self, request: GenerationRequest,
                            options: list[str]) -> dict[str, float] | None:
        self.calls += 1
        return await self.inner.score_options(request, options)


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("steer")
    werewolf_steer.run(
        SteerTrainConfig(games=2, llm="fake", players=5, max_messages=3, max_days=1, states=3,
                         iterations=20, train_steps=5),
        RunContext.of(out=folder, progress=False, embedder=hash_embedder()),
        SteerTrainOptions())
    return folder


def run(policy: Path, out: Path, cache: Path, backend: CountingFake, **kwargs: Any) -> Any:
    model = LLM("fake", backend=backend, cache=ResponseCache(cache))
    chooser = DistilledPlaystyleChooser.load(policy, hash_embedder())
    return werewolf_evaluate.run(
        EvaluateConfig(**CONFIG),
        RunContext.of(out=out, progress=False, pool=LLMPool(factory=lambda _name: model),
                      chooser=chooser),
        EvaluateOptions(steer=policy, **kwargs))


def cache_free(summary: dict) -> dict:
    """evaluate.json without what only the response cache or the clock decides: the cache's
    share of the calls, tokens (a structured answer read from the cache counts 0), the calls'
    latencies and when the run finished."""
    out = {k: v for k, v in summary.items() if k not in ("llm_calls", "finished")}
    out["results"] = [{k: v for k, v in r.items()
                       if k not in ("tokens_per_game", "model_seconds_per_game")}
                      for r in summary["results"]]
    return out


def test_a_killed_run_resumes_to_the_uninterrupted_result(policy: Path, tmp_path: Path) -> None:
    whole = CountingFake()
    run(policy, tmp_path / "whole", tmp_path / "cache-whole", whole)
    expected = json.loads((tmp_path / "whole" / "evaluate.json").read_text())
    assert whole.calls > 0 and len(list((tmp_path / "whole" / "seeds").iterdir())) == 4

    out, cache = tmp_path / "resumed", tmp_path / "cache-resumed"
    first = CountingFake(kill_at=whole.calls * 3 // 5)  # dies during a seed past the first
    with pytest.raises(Killed):
        run(policy, out, cache, first)
    saved = {p.name: p.read_bytes() for p in (out / "seeds").iterdir()}
    assert 0 < len(saved) < 4 and not (out / "evaluate.json").exists()
    for name, data in saved.items():  # gzipped JSON of that seed, named by it
        assert name.endswith(".json.gz")
        assert json.loads(gzip.decompress(data))["seed_index"] == int(name.split(".")[0])
    second = CountingFake()
    run(policy, out, cache, second, resume=True)
    # every call the killed run made is a cache hit now, and none is made twice
    assert (first.calls - 1) + second.calls == whole.calls
    resumed = json.loads((out / "evaluate.json").read_text())
    assert cache_free(resumed) | {"folder": None} == cache_free(expected) | {"folder": None}
    assert database(out / "evaluate.sqlite", hits=False) == \
        database(tmp_path / "whole" / "evaluate.sqlite", hits=False)
    for name, data in saved.items():  # a kept seed file is left as it was written
        assert (out / "seeds" / name).read_bytes() == data

    # without --resume the run starts over (the seeds folder is emptied first)
    third = CountingFake()
    run(policy, out, cache, third)
    assert third.calls == 0  # all from the cache, but every seed played again
    assert len(list((out / "seeds").iterdir())) == 4


def test_plain_json_seeds_of_older_runs_are_kept_and_a_damaged_seed_is_played_again(
        policy: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    run(policy, out, cache, CountingFake())
    expected = cache_free(json.loads((out / "evaluate.json").read_text()))
    seeds = out / "seeds"
    first = seeds / "0.json.gz"  # as runs before 6 Dec 2026 wrote it
    (seeds / "0.json").write_bytes(gzip.decompress(first.read_bytes()))
    first.unlink()
    (seeds / "2.json.gz").write_bytes(b"\x1f\x8b not gzip")
    again = CountingFake()
    run(policy, out, cache, again, resume=True)
    assert again.calls == 0  # seed 2 and 3 played again, from the cache
    assert cache_free(json.loads((out / "evaluate.json").read_text())) == expected
    assert sorted(p.name for p in seeds.iterdir()) == \
        ["0.json", "1.json.gz", "2.json.gz", "3.json.gz"]


@pytest.mark.parametrize("damage", ["a game without `created`", "a step of two parts",
                                    "a game missing"])
def test_a_seed_that_parses_but_lacks_a_part_is_played_again(
        policy: Path, tmp_path: Path, damage: str) -> None:
    """Review 0832c41 L12: such a seed validates as a SavedSeed, yet its games cannot be
    rebuilt; it is damaged like a cut file, and played again (from the cache here)."""
    out, cache = tmp_path / "run", tmp_path / "cache"
    run(policy, out, cache, CountingFake())
    expected = cache_free(json.loads((out / "evaluate.json").read_text()))
    seed = out / "seeds" / "1.json.gz"
    data = json.loads(gzip.decompress(seed.read_bytes()))
    if damage == "a game without `created`":
        del data["games"][1]["created"]
    elif damage == "a step of two parts":
        data["games"][0]["steps"][0] = data["games"][0]["steps"][0][:2]
    else:
        del data["games"][2]
    seed.write_bytes(gzip.compress(json.dumps(data).encode()))
    again = CountingFake()
    run(policy, out, cache, again, resume=True)
    assert again.calls == 0  # seeds 1 to 3 played again, from the cache
    assert cache_free(json.loads((out / "evaluate.json").read_text())) == expected
    rebuilt = json.loads(gzip.decompress(seed.read_bytes()))
    assert len(rebuilt["games"]) == 3 and all("created" in g for g in rebuilt["games"])


def test_other_settings_do_not_resume_from_saved_seeds(policy: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    run(policy, out, cache, CountingFake())
    model = LLM("fake", backend=CountingFake(), cache=ResponseCache(tmp_path / "other-cache"))
    chooser = DistilledPlaystyleChooser.load(policy, hash_embedder())
    other = EvaluateConfig(**{**CONFIG, "max_messages": 3})
    counting = model.backend
    werewolf_evaluate.run(other, RunContext.of(out=out, progress=False, chooser=chooser,
                                               pool=LLMPool(factory=lambda _name: model)),
                          EvaluateOptions(steer=policy, resume=True))
    assert isinstance(counting, CountingFake) and counting.calls > 0  # nothing was kept


def test_paired_differences_count_the_discordant_seeds(policy: Path, tmp_path: Path) -> None:
    summary = run(policy, tmp_path / "run", tmp_path / "cache", CountingFake())
    by_name = {r.condition: r for r in summary.results}
    assert list(by_name) == ["neither steered (static)", "village steered", "werewolves steered"]
    static = by_name["neither steered (static)"]
    assert [d.condition for d in summary.paired] == ["village steered", "werewolves steered"]
    for d in summary.paired:
        cond = by_name[d.condition]
        finals = [(a, b) for a, b in zip(cond.game_ids, static.game_ids, strict=True)]
        assert d.seeds == len(finals) == 4
        # the difference of the two win rates is the paired mean (b - c) / n
        assert d.village_win_difference == pytest.approx(
            cond.village.accuracy - static.village.accuracy)
        assert d.village_win_difference == pytest.approx(
            (d.condition_only_wins - d.static_only_wins) / d.seeds)
        assert 0.0 <= d.mcnemar_p <= 1.0
        if d.condition_only_wins + d.static_only_wins == 0:
            assert d.mcnemar_p == 1.0


def test_unknown_conditions_are_named_before_any_game(policy: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "werewolf", "evaluate", "--steer", str(policy), "--llm", "fake", "--games", "1",
        "--conditions", "static,villagers-steered", "-o", str(tmp_path / "run")])
    assert result.exit_code != 0
    assert "villagers-steered" in result.output and "village-steered" in result.output
    assert not (tmp_path / "run").exists()


def test_the_doc_section_is_the_summarys_numbers_and_renders_again_from_it(
        policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.studies.werewolf_paired_doc import MARKERS, render, write_doc

    out = tmp_path / "run"
    summary = run(policy, out, tmp_path / "cache", CountingFake())
    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\n\nbefore\n")
    write_doc(doc, summary, out)
    text = doc.read_text()
    assert text.startswith("# Doc\n\nbefore\n") and MARKERS[0] in text and MARKERS[1] in text
    for r in summary.results:  # one row per condition, its counts as measured
        v, w = r.village, r.werewolves
        assert (f"| {r.condition} | {v.correct}/{v.n} = {v.accuracy:.2f} [{v.ci_low:.2f}, "
                f"{v.ci_high:.2f}] | {w.correct}/{w.n} = ") in text
    for d in summary.paired:
        assert f"| {d.condition} | 4 | {d.condition_only_wins} / {d.static_only_wins} |" in text
        assert f"| {d.mcnemar_p:.3f} |" in text
    # the lab: the same section from evaluate.json alone, no game played
    from lab.__main__ import main as lab_main

    again = tmp_path / "again.md"
    assert lab_main(["werewolf-paired", "--results", str(out), "--doc", str(again)]) == 0
    # the plot, linked from the doc's folder (both docs sit beside the run's folder)
    section = render(summary, out, "run/evaluate.png").strip()
    assert section in again.read_text() and section in text
    assert "differences with static](run/evaluate.png)" in text and (out / "evaluate.png").exists()
    missing = lab_main(["werewolf-paired", "--results", str(tmp_path / "none"), "--doc",
                        str(again)])
    assert missing == 2 and "holds no finished evaluate run" in capsys.readouterr().err


def test_the_cost_of_resolving_a_difference_comes_from_the_runs_own_timings(
        policy: Path, tmp_path: Path) -> None:
    from gtsteer.evals.paired import PairedDifference
    from lab.studies.werewolf_paired_doc import cost_lines

    summary = run(policy, tmp_path / "run", tmp_path / "cache", CountingFake())
    results = [r.model_copy(update={"model_seconds_per_game": 30.0}) for r in summary.results]
    held = PairedDifference(condition="village steered", seeds=40, condition_only_wins=5,
                            static_only_wins=3, village_win_difference=0.05, low=-0.1, high=0.2,
                            mcnemar_p=0.73, votes_on_wolves_difference=None, votes_low=None,
                            votes_high=None, seeds_to_exclude_zero=600)
    clear = held.model_copy(update={"condition": "werewolves steered", "low": 0.01})
    timed = summary.model_copy(update={"results": results, "paired": [held, clear],
                                       "workers": 2})
    lines = cost_lines(timed)
    # 600 seeds x 3 games x 30 s = 15 hours of model time, 7.5 on two workers at once
    assert lines == [
        "- village steered vs static: about 600 seeds (a t-test at 80% power, if the difference"
        " +0.05 and its spread held); at 90 s of model time per seed (its 3 games), 7.5 hours"
        " on this machine, 2 seed(s) at a time as here; a Ray cluster plays one seed per task"
        " (docs/SCALE.md), so K model workers as fast take about 15.0 hours / K."]


def test_the_command_the_doc_quotes_names_what_differs_from_the_defaults() -> None:
    from gtsteer.cli.werewolf_steer import evaluate_command

    cfg = EvaluateConfig(**{**CONFIG, "games": 100})
    assert evaluate_command(cfg, "docs/data/werewolf_steer", "docs/data/ww", "local", 2, True,
                            "static,village-steered") == (
        "gtsteer werewolf evaluate --games 100 --steer docs/data/werewolf_steer --llm fake "
        "--players 5 --max-messages 2 --max-days 1 --conditions static,village-steered "
        "--ray local --workers 2 --resume --out docs/data/ww")
