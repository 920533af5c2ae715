"""`gtsteer psro`: result files, rerun with zero new calls, restart reuses finished calls."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.runs.psro import PSROSummary

FRUIT = "configs/trade_fruit_tone.yaml"
runner = CliRunner()


def run(out: Path, *extra: str) -> PSROSummary:
    result = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--iterations", "2",
                                 "--candidates", "2", "--out", str(out), "--quiet", *extra])
    assert result.exit_code == 0, result.output
    return PSROSummary.model_validate_json((out / "summary.json").read_text())


def test_psro_writes_summary_and_plot_and_a_rerun_is_free(tmp_path: Path) -> None:
    first = run(tmp_path / "a")
    assert first.llm_calls.new_calls > 0
    assert (tmp_path / "a" / "payoffs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((tmp_path / "a" / "summary.json").read_text())
    it0 = data["iterations"][0]
    assert set(it0["solutions"]) == {"rd", "cce", "nbs"}
    assert len(it0["oracles"]) == 2 and it0["oracles"][0]["calls"][0]["prompt"]
    assert len(it0["metagame"]["mean"]) == 2  # one tensor per player
    assert [len(p) for p in it0["populations"]] == [4, 4]
    assert (tmp_path / "a" / "iterations" / "0.json").exists()
    second = run(tmp_path / "b")
    assert second.llm_calls.new_calls == 0
    assert second.numbers() == first.numbers()


def test_a_restarted_run_reuses_every_finished_call(tmp_path: Path) -> None:
    short = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--iterations", "1",
                                "--candidates", "2", "--out", str(tmp_path / "s"), "--quiet"])
    assert short.exit_code == 0, short.output
    longer = run(tmp_path / "l")
    assert longer.iterations[0].llm.new_calls == 0  # iteration 0 was finished before
    assert longer.llm_calls.new_calls > 0 or longer.converged


def test_bad_options_are_named(tmp_path: Path) -> None:
    # PSROConfig's own validation, in one line naming the flag (and keeping its upper bounds).
    for args, name in ((["--operator", "random"], "--operator:"),
                       (["--meta-solver", "nash"], "--meta-solver:"),
                       (["--candidates", "0"], "--candidates:"),
                       (["--candidates", "65"], "--candidates:"),
                       (["--iterations", "-1"], "--iterations:")):
        result = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--out", str(tmp_path),
                                     *args])
        assert result.exit_code == 2 and name in result.output, result.output


def test_dealt_games_hide_private_info_from_the_meta_game(tmp_path: Path) -> None:
    summary = run(tmp_path / "d", "--deals", "2")
    assert summary.num_deals == 2
    assert summary.iterations[0].metagame.instances == [0]
    bad = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--deals", "0", "--out",
                              str(tmp_path / "x")])
    assert bad.exit_code == 2 and "num_deals" in bad.output, bad.output
