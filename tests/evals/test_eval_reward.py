"""`gtsteer eval reward`: templated cases with known payoffs, Norm and Sgn, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from eval_helpers import TradeOracle
from solve_helpers import MIXED_2X2
from typer.testing import CliRunner

import gtsteer
from gtsteer.binding.reward import payoff_bounds
from gtsteer.binding.reward_cases import OUTCOMES
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.domains.fruit_trade import OWNED, VALUES, parse_counts
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion
from gtsteer.runs import eval_reward
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_reward import CONFIGURED, FREE, RewardOptions, write_cases

ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
runner = CliRunner()


def test_fruit_cases_have_the_payoffs_their_text_says() -> None:
    spec = load_spec(FRUIT)
    cases = write_cases(spec, 6, seed=0)
    assert [c.outcome for c in cases] == [o for o in OUTCOMES for _ in range(6)]
    for case in cases:
        names = case.instance.names
        owned = [parse_counts(i[OWNED]) for i in case.instance.private_info]
        values = [parse_counts(i[VALUES]) for i in case.instance.private_info]
        assert len(case.transcript) == 2 and case.transcript[0].text.startswith("I'll give you")
        if case.outcome != "valid":
            assert case.truth == [0.0, 0.0] and case.facts == {"deal": False}
            continue
        gives = [case.facts[f"{n}_gives"] for n in names]
        for p in range(2):  # only fruit the giver owns, so the trade is possible
            assert all(0 < n <= owned[p][f] for f, n in gives[p].items())
        for p in range(2):
            gain = sum(values[p][f] * n for f, n in gives[1 - p].items())
            loss = sum(values[p][f] * n for f, n in gives[p].items())
            assert case.truth[p] == gain - loss
    assert any(c.truth != [0.0, 0.0] for c in cases)
    assert write_cases(spec, 6, seed=0) == cases  # deterministic
    assert write_cases(spec, 6, seed=1) != cases


def test_known_answers_exact_extraction_vs_zero_free_score() -> None:
    cases = write_cases(load_spec(FRUIT), 5, seed=0)
    model = LLM("trade-oracle", backend=TradeOracle(cases))
    report = eval_reward.measure(
        FRUIT, RunContext.of(llm=model, progress=False), eval_reward.RewardOptions(cases=5))
    assert report.paths == [CONFIGURED, FREE]
    for outcome in (*OUTCOMES, "all"):
        err = report.error(CONFIGURED, outcome)
        assert err.norm.mean == 0.0 and err.sign_flips.accuracy == 0.0 and err.failures == 0
        assert err.cases == (15 if outcome == "all" else 5)
    spec = load_spec(FRUIT)
    bounds = {c.instance.index: payoff_bounds(spec, c.instance) for c in cases}
    spans = {i: hi - lo for i, (lo, hi) in bounds.items()}
    assert {c.bounds for c in report.cases} != {(spec.payoff.min, spec.payoff.max)}
    valid = [(t, spans[c.instance.index]) for c in cases if c.outcome == "valid" for t in c.truth]
    free = report.error(FREE, "valid")
    assert free.norm.mean == pytest.approx(sum(abs(t) / s for t, s in valid) / len(valid))
    assert free.sign_flips.accuracy == pytest.approx(sum(t != 0 for t, _ in valid) / len(valid))
    assert free.sign_flips.n == 10
    for outcome in ("rejected", "incomplete"):
        assert report.error(FREE, outcome).norm.mean == 0.0
    everything = report.error(FREE, "all")
    assert everything.norm.mean == pytest.approx(free.norm.mean / 3)
    assert [c.predicted[CONFIGURED] for c in report.cases] == [c.truth for c in cases]


class BrokenJSON(Backend):
    kind = "broken"
    supports_grammar = True

    async def complete(self, request: GenerationRequest, json_schema=None) -> RawCompletion:
        return RawCompletion(text="not json")


def test_unparseable_rewards_count_as_failures() -> None:
    model = LLM("broken", backend=BrokenJSON("broken"), structured_attempts=1, max_retries=0)
    report = eval_reward.measure(
        FRUIT, RunContext.of(llm=model, progress=False), eval_reward.RewardOptions(cases=2))
    for path in (CONFIGURED, FREE):
        err = report.error(path, "all")
        assert err.failures == 6 and err.norm.n == 0 and err.sign_flips is None
    assert "StructuredOutputError" in report.cases[0].failures[CONFIGURED]


def test_cli_on_fake_model_writes_report(tmp_path: Path) -> None:
    out = tmp_path / "rw"
    args = ["eval", "reward", str(FRUIT), "--llm", "fake", "--cases", "3", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Norm" in result.output and "extract-then-compute" in result.output
    data = json.loads((out / "reward.json").read_text())
    assert data["cases_per_outcome"] == 3 and len(data["cases"]) == 9
    assert {(e["path"], e["outcome"]) for e in data["errors"]} == {
        (p, o) for p in ("configured", "free") for o in (*OUTCOMES, "all")
    }
    for err in data["errors"]:
        assert 0.0 <= err["norm"]["mean"] <= 1.0
    # Sgn is a flip rate and says so (before: `sgn.accuracy`, 0 for a perfect reader)
    assert data["schema_version"] == 2
    for err in data["errors"]:
        assert "sgn" not in err and set(err["sign_flips"]) == {
            "flipped", "n", "rate", "ci_low", "ci_high"}
        assert err["sign_flips"]["rate"] == err["sign_flips"]["flipped"] / err["sign_flips"]["n"]


def test_config_without_exact_utility_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "reward", str(MIXED_2X2), "--llm", "fake", "-q"])
    assert result.exit_code == 2 and "domain: `test_mixed_2x2`" in result.output
    data = yaml.safe_load(FRUIT.read_text())
    del data["domain"]
    path = tmp_path / "free.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="domain: .* has no exact utility"):
        eval_reward.run(path, RunContext.of(llm="fake", out=tmp_path / "o", progress=False),
                        RewardOptions(cases=1))
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("cases", ["0", "1001"])
def test_cli_bad_cases(tmp_path: Path, cases: str) -> None:
    result = runner.invoke(app, ["eval", "reward", str(FRUIT), "--llm", "fake", "-n", cases])
    assert result.exit_code == 2 and "cases" in result.output


@pytest.mark.parametrize("driver", ["eval_reward", "solve", "psro"])
def test_drivers_refuse_what_the_domain_rejects_before_any_llm_call(
    tmp_path: Path, driver: str
) -> None:
    # Loading the spec runs the domain's own checks (fruit trading is bilateral).
    from gtsteer.binding import ConfigError

    data = yaml.safe_load(FRUIT.read_text())
    data["players"] = ["buyer", "seller", "broker"]
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(data))
    model = LLM("fake")
    run = {"eval_reward": lambda: eval_reward.measure(path,
                                                      RunContext.of(llm=model, progress=False),
                                                      eval_reward.RewardOptions(cases=1)),
           "solve": lambda: gtsteer.solve(path, llm=model, out=tmp_path / "s", quiet=True),
           "psro": lambda: gtsteer.psro(path, llm=model, out=tmp_path / "p")}
    with pytest.raises(ConfigError, match="fruit trading needs 2 players, got 3"):
        run[driver]()
    assert model.usage.requests == 0
