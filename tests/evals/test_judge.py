"""Steering classifiers on hand-labelled messages (`gtsteer eval judge`) and the refusal
rule."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from eval_helpers import ToneBackend
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.evals.classifiers import (
    EmbeddingClassifier,
    LoglikClassifier,
    PairwiseClassifier,
    make_classifier,
)
from gtsteer.evals.prompts import DEFINED, PLAIN, options_of
from gtsteer.evals.validation import JudgeRefused, labelled_for
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion
from gtsteer.runs import eval_judge, eval_steering
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import (
    DEFAULT_LABELLED,
    JudgeOptions,
    load_labelled,
    validate_classifier,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "gtsteer" / "configs").glob("*.yaml"))
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
DAYS = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
runner = CliRunner()
_MESSAGE = re.compile(r'Message from [^:]+: "(.*)"')


def truth() -> dict[str, str]:
    """Every labelled message -> its value (messages are unique within the set)."""
    out: dict[str, str] = {}
    for entry in load_labelled().configs.values():
        for values in entry.labels.values():
            for value, messages in values.items():
                out.update(dict.fromkeys(messages, value))
    return out


class LabelOracle(Backend):
    """Knows each labelled message's value: scores it 0 and every other option -5, plus a
    per-option `bias` that ignores the message. `wrong` flips it to prefer any other option.
    Content-free messages get the bias alone."""

    kind = "label-oracle"
    max_concurrency = 16

    def __init__(self, bias: dict[str, float] | None = None, wrong: bool = False) -> None:
        # The name is part of every cache key: oracles that answer differently must differ.
        super().__init__(f"label-oracle-{wrong}-{sorted((bias or {}).items())}")
        self.truth, self.bias, self.wrong = truth(), bias or {}, wrong
        self.calls = 0

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        return RawCompletion(text="Hello.")

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        self.calls += 1
        label = self.truth.get(_MESSAGE.search(request.as_text()).group(1))
        hit = 0.0 if not self.wrong else -5.0
        miss = -5.0 if not self.wrong else 0.0
        return {o: (0.0 if label is None else hit if o == label else miss) + self.bias.get(o, 0.0)
                for o in options}


def oracle(**kwargs: Any) -> LLM:
    backend = LabelOracle(**kwargs)
    return LLM(backend.model, backend=backend)


# ---- the labelled set ---------------------------------------------------------------------


def test_labelled_set_covers_every_config_with_a_steering_eval() -> None:
    labelled = load_labelled()
    assert DEFAULT_LABELLED == ROOT / "gtsteer" / "data" / "judge_labelled.yaml"
    for config in CONFIGS:
        spec = load_spec(config)
        if not any(len(options_of(spec, key)) > 1 for key in spec.action_keys):
            continue  # one instruction and `any` (PSRO's start game): none to tell apart
        entry = labelled_for(spec, labelled)  # raises when values do not match the config
        assert entry is not None, spec.name
        for key, values in entry.labels.items():
            assert sorted(values) == sorted(options_of(spec, key))
            assert all(6 <= len(m) <= 12 for m in values.values()), (spec.name, key)
    messages = [m for e in labelled.configs.values() for v in e.labels.values()
                for ms in v.values() for m in ms]
    assert len(messages) == len(set(messages)) == 246


def test_labelled_values_must_match_the_config(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_LABELLED.read_text())
    del data["configs"]["trade_fruit_tone"]["labels"]["tone"]["submissive"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"trade_fruit_tone\.tone: values .* do not match"):
        labelled_for(load_spec(FRUIT), load_labelled(bad))
    with pytest.raises(FileNotFoundError, match="no file"):
        load_labelled(tmp_path / "missing.yaml")


# ---- classifiers on the labelled set --------------------------------------------------------


def test_oracle_passes_and_a_contrary_classifier_fails() -> None:
    spec, labelled = load_spec(FRUIT), load_labelled()
    (plain, defined) = validate_classifier(spec, LoglikClassifier(oracle()), labelled)
    assert (plain.variant, defined.variant) == (PLAIN, DEFINED)
    assert (plain.accuracy.correct, plain.accuracy.n) == (24, 24) and plain.passes
    assert plain.chance == pytest.approx(1 / 3)
    assert plain.counts == [[8, 0, 0], [0, 8, 0], [0, 0, 8]]
    # A classifier that never picks the true value (ties go to the first other option).
    (plain, _) = validate_classifier(spec, LoglikClassifier(oracle(wrong=True)), labelled)
    assert (plain.accuracy.correct, plain.passes) == (0, False)
    assert plain.counts == [[0, 8, 0], [8, 0, 0], [8, 0, 0]]


def test_calibration_removes_a_label_bias_that_ignores_the_message() -> None:
    # The bias alone would make every answer "assertive"; calibration subtracts it.
    classifier = LoglikClassifier(oracle(bias={"assertive": 4.0}))
    (plain, _) = validate_classifier(load_spec(FRUIT), classifier, load_labelled())
    assert plain.accuracy.correct == 24


def test_pairwise_classifier_wins_every_pair_for_the_true_value() -> None:
    backend = LabelOracle()
    classifier = PairwiseClassifier(LLM("label-oracle", backend=backend))
    backend.calls = 0
    (plain, _) = validate_classifier(load_spec(DAYS), classifier, load_labelled())
    assert (plain.accuracy.correct, plain.accuracy.n) == (42, 42)
    assert classifier.name == f"pairwise:{backend.model}"
    # 42 messages x 21 pairs, plus 2 content-free messages x 21 pairs for the prior.
    assert backend.calls >= 42 * 21 + 2 * 21


def test_make_classifier_spellings() -> None:
    assert isinstance(make_classifier("fake"), LoglikClassifier)
    assert make_classifier("pairwise:fake").name == "pairwise:fake"
    with pytest.raises(ValueError, match="pairwise:` needs a model"):
        make_classifier("pairwise:")


@pytest.fixture(scope="module")
def minilm() -> EmbeddingClassifier:
    return EmbeddingClassifier()


def test_embedding_classifier_on_the_labelled_set(minilm: EmbeddingClassifier) -> None:
    """Real MiniLM (offline). What it measured: days and court focus far above chance, fruit
    tone not: a sentence embedding of "calm" does not separate calm offers from firm ones."""
    assert minilm.name == "embed:all-MiniLM-L6-v2"
    labelled = load_labelled()
    found = {(v.config, v.variant): v for config in CONFIGS
             for v in validate_classifier(load_spec(config), minilm, labelled)}
    days = found[("schedule_meeting_dow", PLAIN)]
    assert days.passes and days.accuracy.correct >= 38  # of 42; measured 41
    assert found[("court", PLAIN)].passes
    assert found[("debate", DEFINED)].passes
    assert not found[("trade_fruit_tone", PLAIN)].passes
    # Deterministic: the same vectors give the same answers.
    again = validate_classifier(load_spec(DAYS), minilm, labelled, (PLAIN,))
    assert again[0].counts == days.counts


# ---- the refusal rule in eval steering ------------------------------------------------------


def test_eval_steering_refuses_a_classifier_at_chance_before_generating() -> None:
    writer = ToneBackend()
    classifier = LoglikClassifier(oracle(wrong=True))
    with pytest.raises(JudgeRefused, match=r"refused.*trade_fruit_tone\.tone \(plain\): 0/24"):
        eval_steering.measure(
            FRUIT,
            RunContext.of(
                llm=LLM("tone-oracle", backend=writer), reader=classifier, progress=False),
            eval_steering.SteeringOptions(samples=2, validate_classifier_on=DEFAULT_LABELLED))
    assert writer.prompts == []  # no message was generated for a refused classifier


def test_eval_steering_keeps_a_validated_classifier_and_drops_a_failing_variant() -> None:
    # Right without definitions; with definitions the prompt holds "- calm: ..." lines, and
    # this backend then prefers "calm" whatever the message.
    class PlainOnly(LabelOracle):
        async def score_options(self, request, options):
            scores = await super().score_options(request, options)
            if "What each choice means" in request.as_text():
                return {o: float(o == "calm") for o in options}
            return scores

    backend = PlainOnly()
    backend.model = "plain-only"
    classifier = LoglikClassifier(LLM("plain-only", backend=backend))
    report = eval_steering.measure(
        FRUIT, RunContext.of(llm="fake", reader=classifier, progress=False),
        eval_steering.SteeringOptions(samples=2, validate_classifier_on=DEFAULT_LABELLED))
    assert [r.variant for r in report.runs] == [PLAIN]
    assert [(v.variant, v.passes) for v in report.judge_validation] == [
        (PLAIN, True), (DEFINED, False)]
    assert any("refused" in s and "(definitions)" in s for s in report.skipped)
    assert report.classifier_model == "plain-only"


def test_eval_steering_refuses_a_config_without_labelled_messages(tmp_path: Path) -> None:
    empty = tmp_path / "none.yaml"
    empty.write_text("schema_version: 1\nconfigs: {}\n")
    with pytest.raises(JudgeRefused, match="no messages for it"):
        eval_steering.measure(
            FRUIT, RunContext.of(llm="fake", reader=oracle(), progress=False),
            eval_steering.SteeringOptions(samples=2, validate_classifier_on=empty))


def test_eval_steering_with_the_embedding_classifier_has_no_llm_classifier(
    minilm: EmbeddingClassifier,
) -> None:
    report = eval_steering.measure(
        DAYS, RunContext.of(llm="fake", reader=minilm, progress=False),
        eval_steering.SteeringOptions(
            samples=2, variants=(PLAIN,), validate_classifier_on=DEFAULT_LABELLED))
    assert report.classifier_model == "embed:all-MiniLM-L6-v2"
    assert report.llm_modes == {} and [r.variant for r in report.runs] == [PLAIN]
    assert report.judge_validation[0].passes


# ---- command line ---------------------------------------------------------------------------


def test_cli_eval_judge_writes_the_report(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "judge", str(FRUIT), "--judge", "fake", "-q",
                                 "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "judge.json").read_text())
    assert [(v["judge"], v["variant"]) for v in data["validations"]] == [
        ("fake", PLAIN), ("fake", DEFINED)]
    assert all(v["accuracy"]["n"] == 24 for v in data["validations"])


def test_cli_eval_steering_refusal_is_one_line_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, [
        "eval", "steering", str(FRUIT), "--llm", "fake", "--samples", "2", "-q",
        "--validate-judge", str(DEFAULT_LABELLED), "-o", str(tmp_path / "out"),
    ])
    assert result.exit_code == 2
    assert "JudgeRefused" in result.output and "not better than chance" in result.output
    assert not (tmp_path / "out" / "steering.json").exists()


def test_cli_eval_judge_bad_labelled_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "judge", str(FRUIT), "--judge", "fake", "-q",
                                 "--labelled", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "no file" in result.output


def test_eval_judge_needs_a_classifier(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        eval_judge.run([FRUIT], RunContext.of(out=tmp_path), JudgeOptions(judges=[]))


def test_cli_eval_steering_prints_the_variant_that_passed(tmp_path: Path) -> None:
    """MiniLM fails debate styles without definitions and passes with them: the table shows
    the definitions column only, and says why the other is missing."""
    result = runner.invoke(app, [
        "eval", "steering", str(ROOT / "gtsteer" / "configs" / "debate.yaml"), "--llm", "fake",
        "--classifier-llm", "embed", "--samples", "2",
        "--validate-judge", str(DEFAULT_LABELLED), "-o", str(tmp_path / "out"),
    ], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "ethos" in line and "│" in line]
    assert len(rows) == 1 and "—" in rows[0] and "/2)" in rows[0]
    assert "debate (plain): refused" in result.output
    report = json.loads((tmp_path / "out" / "steering.json").read_text())
    assert [r["variant"] for r in report["runs"]] == [DEFINED]
