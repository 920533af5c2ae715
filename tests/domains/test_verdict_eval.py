"""The naive and strategic questioners and `gtsteer eval verdict`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from domain_support import CONFIGS, KeywordJudge, spec_of
from typer.testing import CliRunner

from gtsteer.binding import make_instance
from gtsteer.cli import app
from gtsteer.domains.verdict_play import (
    JudgeSetting,
    NaiveQuestioner,
    StrategicQuestioner,
    Table,
    play_verdict_game,
    sample_message,
)
from gtsteer.llm import LLM, run_sync
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_verdict import VerdictOptions, run

QUESTIONS = ["Where were you on Saturday?", "Who has the till key?", "Did you confess?",
             "What time did you leave?", "Did anyone see you?"]
runner = CliRunner()


def keyword_llm() -> LLM:
    return LLM("keyword", backend=KeywordJudge(QUESTIONS), max_retries=0)


def test_strategic_plays_the_best_candidate_and_naive_the_first() -> None:
    spec, llm = spec_of("court"), keyword_llm()
    found_confession = 0
    for index in range(8):
        table = Table(llm=llm, spec=spec, instance=make_instance(spec, index),
                      judge=JudgeSetting(0, 0.0), game_seed=0)
        candidates = [run_sync(sample_message(table, [], 0, ("q", 0, k))).text for k in range(4)]
        naive = run_sync(NaiveQuestioner().message(table, 0))
        strategic = run_sync(StrategicQuestioner(breadth=4).message(table, 0))
        assert naive.text == candidates[0]
        best = next((c for c in candidates if "confess" in c), candidates[0])
        assert strategic.text == best
        found_confession += "confess" in best
    assert 0 < found_confession  # the search mattered somewhere


def test_games_are_won_exactly_when_the_judge_hears_the_keyword() -> None:
    spec, llm = spec_of("court"), keyword_llm()
    wins = {"naive": 0, "strategic": 0}
    for index in range(10):
        instance = make_instance(spec, index)
        for policy in (NaiveQuestioner(), StrategicQuestioner(breadth=6)):
            out = run_sync(play_verdict_game(llm, spec, instance, policy, JudgeSetting(0, 0.0)))
            asked = " ".join(t.text for t in out.transcript if t.speaker == 0)
            assert out.win == ("confess" in asked) and out.rounds == 1
            assert out.returns == ([1.0, -1.0] if out.win else [-1.0, 1.0])
            wins[policy.name] += out.win
    assert wins["strategic"] > wins["naive"]


def test_deeper_search_is_supported() -> None:
    spec = spec_of("court")
    out = run_sync(play_verdict_game(keyword_llm(), spec, make_instance(spec, 1),
                                     StrategicQuestioner(breadth=2, depth=2), JudgeSetting(1, 0.0)))
    assert out.verdict in {"guilty", "not guilty"}


def test_eval_writes_report_games_and_chart_and_reruns_from_cache(tmp_path: Path) -> None:
    config = CONFIGS / "interrogation.yaml"
    report = run(config, RunContext.of(llm="fake", out=tmp_path, progress=False),
                 VerdictOptions(games=3, breadth=2))
    assert report.judge_prompts == spec_of("interrogation").judge.prompts
    assert len(report.cells) == 2 * 3 * 2  # policies x judge prompts x temperatures
    for cell in report.cells:
        win = cell.win
        assert win.n == 3 and 0.0 <= win.ci_low <= win.accuracy <= win.ci_high
        assert sum(cell.verdicts.values()) == 3
    assert report.totals["naive"].n == 3 * 6
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["target_verdict"] == "guilty" and data["questioner"] == "interrogator"
    rows = (tmp_path / "games.jsonl").read_text().splitlines()
    assert len(rows) == 36 and {json.loads(r)["policy"] for r in rows} == {"naive", "strategic"}
    assert (tmp_path / "verdict.png").read_bytes()[:4] == b"\x89PNG"
    again = run(config, RunContext.of(llm="fake", out=tmp_path / "again", progress=False),
                VerdictOptions(games=3, breadth=2))
    assert again.new_llm_calls == 0 and again.cells == report.cells


def test_cli_prints_the_table(tmp_path: Path) -> None:
    args = ["eval", "verdict", str(CONFIGS / "court.yaml"), "--llm", "fake", "--games", "2",
            "--breadth", "2", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "naive" in result.output and "strategic" in result.output
    assert "report.json" in result.output


@pytest.mark.parametrize(
    ("config", "extra", "needle"),
    [
        ("debate.yaml", [], "judge"),
        ("court.yaml", ["--temperatures", "0"], "temperatures"),
        ("court.yaml", ["--temperatures", "x"], "--temperatures"),
        ("court.yaml", ["--games", "0"], "games"),
    ],
)
def test_cli_rejects_bad_input(tmp_path: Path, config: str, extra: list[str], needle: str) -> None:
    args = ["eval", "verdict", str(CONFIGS / config), "--llm", "fake", "--out", str(tmp_path),
            "--quiet", *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and needle in result.output, result.output


def test_eval_needs_two_judge_wordings(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load((CONFIGS / "court.yaml").read_text())
    data["judge"]["alternative_prompts"] = []
    path = tmp_path / "court.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="judge.alternative_prompts"):
        run(path, RunContext.of(llm="fake", out=tmp_path / "o", progress=False),
            VerdictOptions(games=1))


def test_questioner_must_open_each_round(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load((CONFIGS / "court.yaml").read_text())
    data["params"]["questioner"] = 1
    path = tmp_path / "court.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="params.questioner"):
        run(path, RunContext.of(llm="fake", out=tmp_path / "o", progress=False),
            VerdictOptions(games=1))
