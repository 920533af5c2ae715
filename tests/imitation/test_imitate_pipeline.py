"""`gtsteer imitate` end to end: fake model, the packaged MiniLM embedder, real CFR and training."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.imitation import DatasetError, DistilledPolicy, read_records
from gtsteer.llm.embed import EmbedderError
from gtsteer.runs.imitate import ImitationReport

FRUIT = Path(__file__).resolve().parents[2] / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
ARGS = {"llm": "fake", "games": 3, "holdout": 1, "steps": 60, "seed": 0}
CLI_ARGS = ["--llm", "fake", "--games", "3", "--holdout", "1", "--steps", "60", "--quiet"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ImitationReport]:
    out = tmp_path_factory.mktemp("imitate") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GTSTEER_CACHE_DIR", str(out.parent / "cache"))
        mp.setenv("HF_HUB_OFFLINE", "1")
        report = gtsteer.imitate(FRUIT, **ARGS, out=out, quiet=True)
    return out, report


def test_files_and_dataset(run) -> None:
    out, report = run
    assert ImitationReport.model_validate_json((out / "report.json").read_text()) == report
    records = read_records(out / "dataset" / "records.jsonl")
    embeddings = np.load(out / "dataset" / "embeddings.npy")
    # Fruit trading, one message each, 4 tones, 2 samples: 1 proposer + 4x2 responder states.
    assert len(records) == report.dataset.records == 27 and embeddings.shape == (27, 384)
    assert {r.instance for r in records} == {0, 1, 2}
    for i in range(3):
        mine = [r for r in records if r.instance == i]
        assert [r.player for r in mine].count(0) == 1
        assert sum(r.weight for r in mine if r.player == 1) == pytest.approx(1.0)
    assert all(r.text.split(" (")[1].startswith(("proposer", "responder")) for r in records)
    assert report.dataset.feature_dim == 10 and report.embedder == "all-MiniLM-L6-v2"
    assert (out / "training_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report.solve_dir == str(out / "solve") and (out / "solve" / "summary.json").exists()


def test_split_training_and_evaluation(run) -> None:
    _, report = run
    data = report.dataset
    assert len(data.heldout_instances) == 1
    assert sorted(data.train_instances + data.heldout_instances) == [0, 1, 2]
    assert report.training.config.steps == 60 and len(report.training.curve) > 1
    held = report.heldout
    assert held.instances == data.heldout_instances and held.dim_probability.n == 1
    assert report.train.instances == data.train_instances
    assert held.nash_conv.mean >= 0.0 and held.nash_conv_cfr.mean < 0.05
    assert 0.0 <= held.dim_probability.mean <= 1.0
    meta = held.pooled_metagame
    assert meta.joint is not None and len(meta.per_player) == 2
    assert {e.instance for e in report.per_instance} == {0, 1, 2}


def test_saved_model_matches_the_report(run) -> None:
    out, report = run
    policy = DistilledPolicy.load(out / "model")
    assert policy.actions == ["calm", "assertive", "submissive", "any"]
    assert policy.config.domain == "trade_fruit_tone" and policy.config.embedder == report.embedder
    records = read_records(out / "dataset" / "records.jsonl")
    embeddings = np.load(out / "dataset" / "embeddings.npy")
    # The loaded policy embeds texts itself and agrees with the stored embeddings' answer.
    texts = [r.text for r in records[:3]]
    assert np.allclose(
        policy.probs_batch(texts), policy.probs_batch(texts, embeddings=embeddings[:3]), atol=1e-6
    )


def test_rerun_reuses_everything_and_repeats_the_numbers(run) -> None:
    out, report = run
    env = {"GTSTEER_CACHE_DIR": str(out.parent / "cache"), "HF_HUB_OFFLINE": "1"}
    shown = [a for a in CLI_ARGS if a != "--quiet"]  # the tables: -q prints only the summary
    result = CliRunner().invoke(app, ["imitate", str(FRUIT), *shown, "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert "P(DIM)" in result.output and "report:" in result.output
    again = ImitationReport.model_validate_json((out / "report.json").read_text())
    assert again.solve_reused and again.llm_calls.new_calls == 0
    assert again.numbers() == report.numbers()


def test_a_budget_stop_says_how_to_continue_and_the_rerun_finishes(run, tmp_path: Path) -> None:
    """`--max-calls` stops imitate (exit 3) with the way on: raise it and rerun with the same
    --out; that rerun takes up the partial folder and ends with the unlimited run's numbers."""
    _, full = run
    out = tmp_path / "run"
    args = ["imitate", str(FRUIT), *CLI_ARGS, "--out", str(out)]
    stopped = CliRunner().invoke(app, [*args, "--max-calls", "40"])
    assert stopped.exit_code == 3, stopped.output
    said = " ".join(stopped.output.split())
    assert "stopped: --max-calls 40 reached" in said
    assert f"raise --max-calls and rerun with the same --out {out} to continue" in said
    assert (out / "IN_PROGRESS").exists() and not (out / "report.json").exists()
    rest = CliRunner().invoke(app, [*args, "--max-calls", "100000"])
    assert rest.exit_code == 0, rest.output
    again = ImitationReport.model_validate_json((out / "report.json").read_text())
    assert not (out / "IN_PROGRESS").exists() and not again.solve_reused
    assert again.numbers() == full.numbers()


def test_max_calls_raises_the_tree_bound_and_a_refused_tree_leaves_no_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal of a tree past the bound says "raise --max-calls": imitate has the flag and
    it raises the bound, as solve's does; the refused run made no folder."""
    monkeypatch.setattr("gtsteer.runs.solve.DEFAULT_MAX_CALLS", 100)  # 3 x 136 requests past it
    out = tmp_path / "run"
    args = ["imitate", str(FRUIT), *CLI_ARGS, "--out", str(out)]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2, refused.output
    said = " ".join(refused.output.split())
    assert "(bound 100, --max-calls): past the bound" in said and "or raise --max-calls" in said
    assert not out.exists()
    raised = CliRunner().invoke(app, [*args, "--max-calls", "1000"])
    assert raised.exit_code == 0, raised.output
    assert (out / "report.json").exists()


# ---- bad input: each fails before any solving (no run folder is made) ----------------------


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"games": 1}, ValueError, "--games: need at least 2"),
        ({"holdout": 0.1}, DatasetError, "empty held-out set"),
        ({"holdout": 3}, DatasetError, "leaves none to train on"),
        ({"holdout": 0}, ValueError, "--holdout"),
        ({"features": "pixels"}, ValueError, "--features"),
        ({"steps": 0}, ValueError, "--steps"),
        ({"embedder": "no-such-org/no-such-embedder"}, EmbedderError, "no-such-embedder"),
    ],
)
def test_bad_input_fails_before_work(tmp_path: Path, changes, error, message) -> None:
    out = tmp_path / "run"
    with pytest.raises(error, match=message):
        gtsteer.imitate(FRUIT, **{**ARGS, **changes}, out=out, quiet=True)
    assert not out.exists()


def test_cli_prints_one_paragraph_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["imitate", str(FRUIT), "--llm", "fake", "--games", "2", "--holdout", "0.1",
              "--out", str(tmp_path / "run")],
    )
    assert result.exit_code == 2
    assert "error:" in result.output and "empty held-out set" in result.output
    assert "Traceback" not in result.output


def test_solve_results_of_other_arguments_are_not_reused(run) -> None:
    from gtsteer.domains import load_spec
    from gtsteer.runs.imitate import SolveArgs, _matching_summary

    out, _ = run
    summary = json.loads((out / "solve" / "summary.json").read_text())
    spec = load_spec(FRUIT)
    args = SolveArgs(str(FRUIT), spec, "fake", 3, 0, summary["solver"], summary["iterations"])
    assert _matching_summary(out / "solve", args) is not None
    for change in ({"games": 4}, {"model": "other"}, {"seed": 1}, {"spec": spec.with_deals(2)}):
        assert _matching_summary(out / "solve", replace(args, **change)) is None
