"""`gtsteer eval steering`: known-answer accuracy, the game's own messages, files, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from eval_helpers import TONE_TEXT, ToneBackend
from typer.testing import CliRunner

from gtsteer.binding import ConfigError
from gtsteer.cli import app
from gtsteer.domains import load_game, spec_from_dict
from gtsteer.evals.prompts import DEFINED, PLAIN, classifier_prompt
from gtsteer.llm import LLM
from gtsteer.runs import eval_steering
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_steering import SteeringOptions

ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
runner = CliRunner()


def oracle() -> LLM:
    return LLM("tone-oracle", backend=ToneBackend())


def test_known_answers_with_and_without_definitions() -> None:
    report = eval_steering.measure(
        FRUIT, RunContext.of(llm=oracle(), progress=False),
        eval_steering.SteeringOptions(samples=4))
    plain, defined = report.run(PLAIN), report.run(DEFINED)
    assert plain is not None and defined is not None and report.skipped == []
    assert plain.calibrated and plain.aggregate_uncalibrated == plain.aggregate
    acc = {r.value: (r.accuracy.correct, r.accuracy.n) for r in plain.per_instruction}
    # Without definitions "submissive" (never named) falls to the first option, calm.
    assert acc == {"calm": (4, 4), "assertive": (4, 4), "submissive": (0, 4)}
    assert (plain.aggregate.correct, plain.aggregate.n) == (8, 12)
    assert plain.aggregate.accuracy == pytest.approx(2 / 3)
    assert plain.chance == pytest.approx(1 / 3)
    assert {r.value: r.accuracy.correct for r in defined.per_instruction} == {
        "calm": 4, "assertive": 4, "submissive": 4,
    }
    assert defined.aggregate.accuracy == 1.0
    # Unguided messages name no tone: all classified calm, the base rate of calm.
    assert {r.value: r.base_rate for r in plain.per_instruction} == {
        "calm": 1.0, "assertive": 0.0, "submissive": 0.0,
    }
    # "calm" and "assertive" messages name their tone; "submissive" and unguided ones do not.
    assert {r.value: (r.mention_rate, r.mention_base_rate) for r in plain.per_instruction} == {
        "calm": (1.0, 0.0), "assertive": (1.0, 0.0), "submissive": (0.0, 0.0),
    }
    (conf,) = plain.confusion
    assert conf.rows == ["calm", "assertive", "submissive", "any"]
    assert conf.columns == ["calm", "assertive", "submissive"]
    assert conf.counts == [[4, 0, 0], [0, 4, 0], [4, 0, 0], [4, 0, 0]]
    # Wilson interval: 4/4 is not [1, 1]; 0/4 starts at 0.
    sub = next(r for r in plain.per_instruction if r.value == "submissive").accuracy
    assert sub.ci_low == 0.0 and 0.4 < sub.ci_high < 0.6
    calm = next(r for r in plain.per_instruction if r.value == "calm").accuracy
    assert 0.4 < calm.ci_low < 0.6 and calm.ci_high == pytest.approx(1.0)
    assert report.speaker_role == "proposer"


def test_calibration_removes_a_label_bias() -> None:
    # The classifier adds 15 to "assertive" whatever the message: raw argmax says assertive for
    # everything; subtracting the content-free prior restores the known answers.
    biased = LLM("tone-oracle", backend=ToneBackend(bias={"assertive": 15.0}))
    report = eval_steering.measure(
        FRUIT, RunContext.of(llm=biased, progress=False), eval_steering.SteeringOptions(samples=2))
    plain = report.run(PLAIN)
    assert plain.calibrated
    assert (plain.aggregate_uncalibrated.correct, plain.aggregate.correct) == (2, 4)
    assert {s.predicted_uncalibrated[PLAIN] for s in report.samples} == {"assertive"}
    assert report.run(DEFINED).aggregate.correct == 6
    sample = report.samples[0]
    assert sample.prior[PLAIN]["assertive"] == pytest.approx(4.99)  # -10 - 0.01 * 1 + 15
    assert sample.scores[PLAIN]["calm"] == 0.0 and sample.predicted[PLAIN] == "calm"


def test_messages_are_the_ones_the_game_plays() -> None:
    report = eval_steering.measure(
        FRUIT, RunContext.of(llm=oracle(), progress=False),
        eval_steering.SteeringOptions(samples=3))
    for sample in report.samples:
        game = load_game(FRUIT, llm=oracle(), instance=sample.instance)
        state = game.new_initial_state()
        state.apply_action(game.instructions(0).index(sample.instruction))
        state.apply_action(sample.outcome)
        assert state.turns[-1].text == sample.message
    expected = {None if s.instructed == "any" else s.instructed for s in report.samples}
    assert {s.message for s in report.samples} == {TONE_TEXT[t] for t in expected}
    # 3 samples over 2 seeds per instance: instances 0, 0, 1 with outcomes 0, 1, 0.
    calm = [(s.instance, s.outcome) for s in report.samples if s.instructed == "calm"]
    assert calm == [(0, 0), (0, 1), (1, 0)]


def test_classifier_prompt_shows_definitions_only_when_asked() -> None:
    spec = load_game(FRUIT).spec
    plain = classifier_prompt(spec, "tone", "Ann", "Hi.", definitions=False)
    defined = classifier_prompt(spec, "tone", "Ann", "Hi.", definitions=True)
    assert "yielding" not in plain and "- submissive: yielding" in defined
    assert plain.endswith("The tone is:") and "calm, assertive, submissive" in plain
    assert "any" not in plain.split("choices are:")[1]


def test_two_keys_share_the_unguided_message_and_skip_undefined_keys(tmp_path: Path) -> None:
    data = yaml.safe_load(FRUIT.read_text())
    data["actions"]["pace"] = ["slow", "fast", "any"]
    path = tmp_path / "two_keys.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    backend = ToneBackend()
    report = eval_steering.measure(
        path, RunContext.of(llm=LLM("tone-oracle", backend=backend), progress=False),
        eval_steering.SteeringOptions(samples=2))
    plain, defined = report.run(PLAIN), report.run(DEFINED)
    assert plain.keys == ["tone", "pace"] and defined.keys == ["tone"]
    assert report.skipped == ["definitions: the config has no instruction_definitions for `pace`"]
    labels = {s.instruction for s in report.samples}
    assert "tone=calm|pace=any" in labels and "tone=any|pace=fast" in labels
    assert "tone=any|pace=any" in labels
    # 5 instructed values + 1 unguided label, 2 samples each: 12 generations (none twice).
    assert len(backend.prompts) == 12
    assert [len(r.per_instruction) for r in (plain, defined)] == [5, 3]


def test_run_writes_report_and_pngs(tmp_path: Path) -> None:
    report = eval_steering.run(FRUIT, RunContext.of(llm=oracle(), out=tmp_path / "s",
                                                    progress=False), SteeringOptions(samples=2))
    out = report.folder
    data = json.loads((out / "steering.json").read_text())
    assert data["samples_per_instruction"] == 2 and data["domain"] == "trade_fruit_tone"
    assert [r["variant"] for r in data["runs"]] == ["plain", "definitions"]
    for run in report.runs:
        (png,) = run.png
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data["samples"]) == 2 * 4


def test_cli_on_fake_model(tmp_path: Path) -> None:
    out = tmp_path / "steer"
    args = ["eval", "steering", str(FRUIT), "--llm", "fake", "--steering-samples", "3"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "steering" in result.output and "with defs" in result.output
    data = json.loads((out / "steering.json").read_text())
    assert data["model"] == "fake" and data["classifier_model"] == "fake"
    for run in data["runs"]:
        assert sum(r["accuracy"]["n"] for r in run["per_instruction"]) == 9
        assert sum(map(sum, run["confusion"][0]["counts"])) == 12
    assert data["llm_calls"]["new_calls"] > 0
    again = runner.invoke(app, [*args, "--out", str(out)])
    assert again.exit_code == 0
    assert json.loads((out / "steering.json").read_text())["llm_calls"]["new_calls"] == 0


def test_eval_steering_samples_is_a_deprecated_alias(tmp_path: Path) -> None:
    fruit = str(FRUIT)
    old = runner.invoke(app, ["eval", "steering", fruit, "--llm", "fake", "--samples", "2",
                              "--out", str(tmp_path / "a"), "--quiet"])
    assert old.exit_code == 0, old.output
    assert "--samples is deprecated" in old.output and "--steering-samples" in old.output
    new = runner.invoke(app, ["eval", "steering", fruit, "--llm", "fake",
                              "--steering-samples", "2", "--out", str(tmp_path / "b"),
                              "--quiet"])
    assert new.exit_code == 0, new.output
    assert "deprecated" not in new.output
    for folder in ("a", "b"):
        data = json.loads((tmp_path / folder / "steering.json").read_text())
        assert data["samples_per_instruction"] == 2
    both = runner.invoke(app, ["eval", "steering", fruit, "--llm", "fake", "--samples", "2",
                               "--steering-samples", "3", "--out", str(tmp_path / "c")])
    assert both.exit_code == 2 and "--steering-samples" in both.output


@pytest.mark.parametrize("samples", ["0", "-2", "1001"])
def test_cli_bad_samples(tmp_path: Path, samples: str) -> None:
    out = tmp_path / "o"
    args = ["eval", "steering", str(FRUIT), "--llm", "fake", "--steering-samples", samples,
            "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "samples" in result.output
    assert not out.exists()


def test_cli_missing_config_and_bad_model(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "steering", str(tmp_path / "nope.yaml"), "--llm", "fake"])
    assert result.exit_code == 2 and "nope.yaml" in result.output
    result = runner.invoke(
        app, ["eval", "steering", str(FRUIT), "--llm", "fake", "--classifier-llm", " ", "-q",
              "-o", str(tmp_path / "x")],
    )
    assert result.exit_code == 2 and "model string" in result.output.lower()


@pytest.mark.parametrize(
    ("defs", "message"),
    [
        ({"tone": {"calm": "x", "any": "w"}}, "`any` is the unguided baseline"),
        ({"mood": {"calm": "x"}}, "`mood` is not an action key"),
        ({"tone": {"calm": " ", "assertive": "y", "submissive": "z"}}, "empty definition"),
        ({"tone": {"calm": "x", "asertive": "y", "submissive": "z"}},
         "defines ['asertive'], which are not values of `tone`"),
        ({"tone": {"calm": "x", "assertive": "y"}}, "no definition for ['submissive']"),
    ],
)
def test_bad_definitions_fail_at_load_naming_the_field(defs: dict, message: str) -> None:
    data = yaml.safe_load(FRUIT.read_text())
    data["instruction_definitions"] = defs
    with pytest.raises(ConfigError, match="instruction_definitions") as info:
        spec_from_dict(data, "x.yaml")
    assert message in str(info.value)


def test_only_grown_values_may_lack_a_definition(tmp_path: Path) -> None:
    # A value PSRO appended (`grown`) has no definition; the key is then measured plainly.
    data = yaml.safe_load(FRUIT.read_text())
    data["actions"]["tone"] = ["calm", "assertive", "submissive", "any", "meek"]
    with pytest.raises(ConfigError, match=r"no definition for \['meek'\]"):
        spec_from_dict(data, "x.yaml")
    data["grown"] = [["tone", "meek"]]
    path = tmp_path / "grown.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    report = eval_steering.measure(
        path, RunContext.of(llm=oracle(), progress=False), eval_steering.SteeringOptions(samples=1))
    assert report.run(DEFINED) is None
    assert report.skipped == ["definitions: instruction_definitions.tone lacks ['meek']"]
