"""`gtsteer eval reward` on meeting scheduling: cases with known payoffs, an exact oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from eval_helpers import DayOracle
from typer.testing import CliRunner

from gtsteer.binding.reward_cases import OUTCOMES
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import OUT_OF_OFFICE, PREFERENCES, parse_days
from gtsteer.llm import LLM
from gtsteer.runs import eval_reward
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_reward import CONFIGURED, FREE, write_cases

ROOT = Path(__file__).resolve().parents[2]
DOW = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
TONE = ROOT / "gtsteer" / "configs" / "schedule_meeting_tone.yaml"
runner = CliRunner()


@pytest.mark.parametrize("config", [DOW, TONE], ids=["dow", "tone"])
def test_meeting_cases_pay_the_agreed_days_preference(config: Path) -> None:
    spec = load_spec(config)
    cases = write_cases(spec, 8, seed=0)
    assert [c.outcome for c in cases] == [o for o in OUTCOMES for _ in range(8)]
    for case in cases:
        away = [parse_days(i[OUT_OF_OFFICE]) for i in case.instance.private_info]
        prefs = [parse_counts(i[PREFERENCES]) for i in case.instance.private_info]
        assert len(case.transcript) == 2
        if case.outcome != "valid":
            assert case.truth == [0.0, 0.0] and case.facts == {"agreed": False, "day": "none"}
            continue
        day = case.facts["day"]
        assert case.facts["agreed"] is True
        assert day in case.transcript[0].text and day in case.transcript[1].text
        # Out-of-office is at most 2 of 7 days each, so a day both can attend always exists.
        assert all(day not in a for a in away)
        assert case.truth == [float(p[day]) for p in prefs]
        assert all(t >= 1 for t in case.truth)
    assert write_cases(spec, 8, seed=0) == cases  # deterministic
    assert write_cases(spec, 8, seed=1) != cases


@pytest.mark.parametrize("config", [DOW, TONE], ids=["dow", "tone"])
def test_meeting_known_answers_exact_extraction_vs_constant_free_score(config: Path) -> None:
    cases = write_cases(load_spec(config), 4, seed=0)
    report = eval_reward.measure(
        config, RunContext.of(llm=LLM("day-oracle", backend=DayOracle(cases)), progress=False),
        eval_reward.RewardOptions(cases=4))
    assert report.domain == load_spec(config).name
    assert "schedule_meeting" in report.configured_path
    assert [c.predicted[CONFIGURED] for c in report.cases] == [c.truth for c in cases]
    assert {c.bounds for c in report.cases} == {(0.0, 10.0)}  # no derived bounds: the config's
    for outcome in (*OUTCOMES, "all"):
        err = report.error(CONFIGURED, outcome)
        assert err.norm.mean == 0.0 and err.sign_flips.accuracy == 0.0 and err.failures == 0
        assert err.cases == (12 if outcome == "all" else 4)
    # The free oracle says 10 for everyone: off by 10 - truth on a 0..10 scale, and a sign
    # flip exactly where the truth is 0 (every rejected or incomplete pair, no valid one).
    for outcome in (*OUTCOMES, "all"):
        truths = [t for c in cases if outcome in ("all", c.outcome) for t in c.truth]
        err = report.error(FREE, outcome)
        assert err.norm.mean == pytest.approx(sum(10 - t for t in truths) / len(truths) / 10)
        assert err.sign_flips.accuracy == pytest.approx(sum(t == 0 for t in truths) / len(truths))
    assert report.error(FREE, "valid").sign_flips.accuracy == 0.0
    for outcome in ("rejected", "incomplete"):
        assert report.error(FREE, outcome).norm.mean == 1.0
        assert report.error(FREE, outcome).sign_flips.accuracy == 1.0


def test_one_day_week_still_writes_an_unfinished_dialogue(tmp_path: Path) -> None:
    data = yaml.safe_load(DOW.read_text())
    data["actions"]["day"] = ["Monday", "any"]
    data["instruction_definitions"]["day"] = {"Monday": "proposes to meet on Monday"}
    data["params"].update(days=["Monday"], out_of_office=[0, 0])
    data["private_info"] = {"out_of_office": ["none"], "day_preferences": ["Monday: 4"]}
    path = tmp_path / "monday.yaml"
    path.write_text(yaml.safe_dump(data))
    cases = write_cases(load_spec(path), 2, seed=0)
    unfinished = [c for c in cases if c.outcome == "incomplete"]
    assert all("Monday" in c.transcript[1].text and c.truth == [0.0, 0.0] for c in unfinished)
    assert all(c.truth[0] >= 1 for c in cases if c.outcome == "valid")


def test_cli_on_fake_model_scores_meeting_cases(tmp_path: Path) -> None:
    out = tmp_path / "rw"
    args = ["eval", "reward", str(TONE), "--llm", "fake", "--cases", "2", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "extract-then-compute" in result.output
    data = json.loads((out / "reward.json").read_text())
    assert data["domain"] == "schedule_meeting_tone" and len(data["cases"]) == 6
    for err in data["errors"]:
        assert 0.0 <= err["norm"]["mean"] <= 1.0
