"""`werewolf evaluate` on chosen conditions, paired with static seed by seed, and resumable: a
run killed in the middle of a seed and resumed gives the games and results of one uninterrupted
run, and no model call is made twice (fake model, no Ray)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from werewolf_helpers import database, hash_embedder

from gtsteer.cli import app
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion, ResponseCache
from gtsteer.llm.backends.fake import FakeBackend
from gtsteer.runs.werewolf_evaluate import EvaluateConfig, evaluate
from gtsteer.runs.werewolf_steer import SteerTrainConfig, steer_train
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
    steer_train(SteerTrainConfig(games=2, llm="fake", players=5, max_messages=3, max_days=1,
                                 states=3, iterations=20, train_steps=5),
                folder, embedder=hash_embedder(), show_progress=False)
    return folder


def run(policy: Path, out: Path, cache: Path, backend: CountingFake, **kwargs: Any) -> Any:
    model = LLM("fake", backend=backend, cache=ResponseCache(cache))
    chooser = DistilledPlaystyleChooser.load(policy, hash_embedder())
    return evaluate(EvaluateConfig(**CONFIG), policy, out, steered=chooser,
                    pool=LLMPool(factory=lambda _name: model), show_progress=False, **kwargs)


def cache_free(summary: dict) -> dict:
    """evaluate.json without what only the response cache decides: the cache's share of the
    calls, and tokens (a structured answer read from the cache counts 0)."""
    out = {k: v for k, v in summary.items() if k != "llm_calls"}
    out["results"] = [{k: v for k, v in r.items() if k != "tokens_per_game"}
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
    saved = sorted(p.name for p in (out / "seeds").iterdir())
    assert 0 < len(saved) < 4 and not (out / "evaluate.json").exists()
    second = CountingFake()
    run(policy, out, cache, second, resume=True)
    # every call the killed run made is a cache hit now, and none is made twice
    assert (first.calls - 1) + second.calls == whole.calls
    resumed = json.loads((out / "evaluate.json").read_text())
    assert cache_free(resumed) | {"folder": None} == cache_free(expected) | {"folder": None}
    assert database(out / "evaluate.sqlite", hits=False) == \
        database(tmp_path / "whole" / "evaluate.sqlite", hits=False)
    for name in saved:  # a kept seed file is left as it was written
        assert json.loads((out / "seeds" / name).read_text())["seed_index"] == int(name[:-5])

    # without --resume the run starts over (the seeds folder is emptied first)
    third = CountingFake()
    run(policy, out, cache, third)
    assert third.calls == 0  # all from the cache, but every seed played again
    assert len(list((out / "seeds").iterdir())) == 4


def test_other_settings_do_not_resume_from_saved_seeds(policy: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    run(policy, out, cache, CountingFake())
    model = LLM("fake", backend=CountingFake(), cache=ResponseCache(tmp_path / "other-cache"))
    chooser = DistilledPlaystyleChooser.load(policy, hash_embedder())
    other = EvaluateConfig(**{**CONFIG, "max_messages": 3})
    counting = model.backend
    evaluate(other, policy, out, steered=chooser, pool=LLMPool(factory=lambda _name: model),
             show_progress=False, resume=True)
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
        assert d.village_win_difference == pytest.approx(cond.village.rate - static.village.rate)
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
