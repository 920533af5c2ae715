"""`gtsteer psro`: result files, rerun with zero new calls, restart reuses finished calls."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.runs.psro import PSROSummary

FRUIT = "gtsteer/configs/trade_fruit_tone.yaml"
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
    # the exact Nash MILP runs only when it drives or --report-nash asks (review 66ff82a L3)
    assert set(it0["solutions"]) == {"rd", "cce", "mecce", "nbs"}
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
                       (["--meta-solver", "lemke"], "--meta-solver:"),
                       (["--candidates", "0"], "--candidates:"),
                       (["--candidates", "65"], "--candidates:"),
                       (["--iterations", "-1"], "--iterations:"),
                       (["--gap-tolerance", "-1"], "--gap-tolerance:"),
                       (["--heldout-gate"], "--heldout-gate: Value error, needs heldout")):
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


def _fruit(out: Path, *extra: str) -> PSROSummary:
    """The review's fake fruit run (issue 22): 2 games, 2 iterations, 3 candidates."""
    result = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--iterations", "2",
                                 "--candidates", "3", "--games", "2", "--out", str(out),
                                 "--quiet", *extra])
    assert result.exit_code == 0, result.output
    return PSROSummary.model_validate_json((out / "summary.json").read_text())


def test_rd_meta_strategy_far_from_equilibrium_is_not_converged(tmp_path: Path) -> None:
    # RD's time average can sit far from equilibrium while no candidate improves on it; that is
    # no convergence (before: "converged: true"). Relations, not this fake run's numbers, which
    # move whenever the fake model's samples do.
    # seed 2, 4 iterations: iteration 3 adds nothing with the rd gap far above its limit
    summary = _fruit(tmp_path / "rd", "--report-nash", "--seed", "2", "--iterations", "4")
    for it in summary.iterations:
        nothing = all(a is None for a in it.added) and not any(it.rejected)
        # the last report has no oracle step; an oracle that scored nothing searched nothing
        searched = bool(it.oracles) and not any(o.no_candidate for o in it.oracles)
        assert it.converged == (nothing and it.gap <= it.gap_limit and searched)
        rd, nash = it.solutions["rd"], it.solutions["nash"]
        assert rd.gap_name == "nash_conv" and it.gap == rd.gap
        # the exact solver's equilibrium: its NashConv to HiGHS's feasibility tolerance (1e-7)
        # times the meta-game's span, not to the last bits
        span = float(np.ptp(np.asarray(it.metagame.mean)))
        assert nash.gap < 1e-7 * span
        assert it.solutions["cce"].gap_name == "cce_gap"
    far = [it for it in summary.iterations
           if all(a is None for a in it.added) and it.gap > it.gap_limit]
    assert far and not far[-1].converged and not summary.converged


def test_nbs_driven_run_converges_when_nothing_is_added(tmp_path: Path) -> None:
    # The NBS is not an equilibrium (a large CCE gap), so its gap is reported but is no
    # stopping test: an nbs run converges when no oracle finds an improvement (review 66ff82a
    # L2; before, it could never converge and ran every iteration on the same meta-game).
    # seed 2: the fake proposer's candidates improve on nothing at iteration 0
    summary = _fruit(tmp_path / "nbs", "--meta-solver", "nbs", "--seed", "2")
    first = summary.iterations[0]
    assert first.added == [None, None] and first.rejected == [None, None]
    assert first.stop_rule == "nothing_added" and first.gap > first.gap_limit
    assert first.converged and summary.converged and len(summary.iterations) == 1
    assert first.gap == first.solutions["nbs"].gap
    # the same iteration-0 meta-game as an rd-driven run: the same exact NBS
    rd_run = _fruit(tmp_path / "rd", "--seed", "2")
    assert first.solutions["nbs"].payoffs == pytest.approx(
        rd_run.iterations[0].solutions["nbs"].payoffs, abs=1e-12)


def test_max_calls_stops_psro_after_that_many_new_calls(tmp_path):
    """PSRO expands the same trees as solve: the worst-case estimate is printed, and
    --max-calls (new calls, issue 60) stops the run cleanly (exit 3) with no summary yet."""
    result = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--out", str(tmp_path),
                                 "--max-calls", "10"])
    assert result.exit_code == 3, result.output
    assert "game tree: at most" in result.output
    assert "stopped: --max-calls 10 reached (10 new calls)" in " ".join(result.output.split())
    assert not (tmp_path / "summary.json").exists()
