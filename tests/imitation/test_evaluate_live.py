"""`gtsteer evaluate CONFIG --policy DIR`: the policy against `any`, greedy and uniform on fresh
dialogues played live, on the fake model.

The game (tests/live_helpers.py) pays by the two instructions alone, so every number the
summary states can be recomputed by hand from the per-instance files; the kill -9 test stops a
CLI run in a subprocess after its first instance was saved and resumes it.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from live_helpers import live_config, live_policy
from scipy import stats
from typer.testing import CliRunner

from gtsteer.binding import make_instance
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.runs.context import RunContext
from gtsteer.runs.evaluate_live import (
    EvaluateLiveOptions,
    EvaluateLiveResult,
    LiveInstanceRow,
)
from gtsteer.runs.evaluate_live import run as run_evaluate

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return live_config(tmp_path)


@pytest.fixture
def policy(config: Path, tmp_path: Path) -> Path:
    return live_policy(config, tmp_path / "policy")


def evaluate(config: Path, out: Path, policy: Path, **options) -> EvaluateLiveResult:
    ctx = RunContext.of(llm="fake", out=out, progress=False)
    return run_evaluate(config, ctx, EvaluateLiveOptions(policy=str(policy), **options))


def rows(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((out / "instances").glob("*.json"))}


def test_the_summary_is_the_mean_and_t_interval_of_the_saved_instances(
        config: Path, policy: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = evaluate(config, out, policy, games=4, samples=2)
    saved = EvaluateLiveResult.model_validate_json((out / "evaluate.json").read_text())
    assert saved == result and not (out / "IN_PROGRESS").exists()
    assert result.baselines == ["any", "greedy", "uniform"] and result.notes[0].startswith(
        "skipped")
    files = [LiveInstanceRow.model_validate_json(t) for t in rows(out).values()]
    assert sorted(r.index for r in files) == result.instances
    spec = load_spec(config)
    for row in files:
        # 2 samples x (all any + 2 players x (policy, greedy, uniform))
        assert len(row.dialogues) == 2 * 7
        for d in row.dialogues:  # the payoffs are the game's, read off the instructions
            moves = [t.instruction for t in d.turns]
            assert d.returns == pytest.approx(payoff(moves))
            if d.condition == "greedy":
                assert moves[d.player] == "a"
            if d.condition == "any":
                assert moves == ["any", "any"]
        # paired: every condition of a sample is one game, so the same instructions give the
        # same words (the `any` seat's message is the all-`any` dialogue's)
        bases = [next(d for d in row.dialogues if d.condition == "any" and d.sample == k)
                 for k in range(2)]
        assert bases[0].turns[0].text != bases[1].turns[0].text  # sample k: offset k
        for k, base in enumerate(bases):
            for d in row.dialogues:
                if d.sample == k and d.player == 1:
                    assert d.turns[0].text == base.turns[0].text
    for stat in result.stats:
        gains = []
        for row in files:
            mine = [d.returns[stat.player] for d in row.dialogues
                    if d.condition == "policy" and d.player == stat.player]
            theirs = [d.returns[stat.player] for d in row.dialogues
                      if d.condition == stat.baseline
                      and d.player == (None if stat.baseline == "any" else stat.player)]
            assert len(mine) == len(theirs) == 2
            gains.append(sum(mine) / 2 - sum(theirs) / 2)
        n = len(gains)
        mean = sum(gains) / n
        sd = math.sqrt(sum((g - mean) ** 2 for g in gains) / (n - 1))
        half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
        assert stat.gain.n == n == 4 and stat.role == spec.players[stat.player]
        assert stat.gain.mean == pytest.approx(mean)
        assert stat.gain.ci_low == pytest.approx(mean - half)
        assert stat.gain.ci_high == pytest.approx(mean + half)
    # not every gain is 0: the hand computation has something to check
    assert any(abs(s.gain.mean) > 0.1 for s in result.stats)
    assert any(s.gain.ci_high - s.gain.ci_low > 0.1 for s in result.stats)


def payoff(moves: list[str | None]) -> list[float]:
    from solve_helpers import MOVES, PAYOFF

    value = PAYOFF[MOVES.index(moves[0] or "any")][MOVES.index(moves[1] or "any")]
    return [value, -value]


def test_instances_of_the_policy_s_dataset_are_skipped_and_named(
        config: Path, policy: Path, tmp_path: Path) -> None:
    spec = load_spec(config)
    trained = make_instance(spec, 0).model_dump(exclude={"index", "seed"})
    result = evaluate(config, tmp_path / "a", policy, games=4)
    assert result.training.train_instances == [0] and result.training.seed == 0
    assert result.training.seed_from == "metadata.train.seed"
    # instance 0 is the training instance; every other generated one alike in names is too
    same = [i for i in range(result.instances[-1] + 1)
            if make_instance(spec, i).model_dump(exclude={"index", "seed"}) == trained]
    assert 0 in same and len(same) >= 2
    assert [s.index for s in result.skipped] == same
    assert all(s.same_as == 0 for s in result.skipped)
    assert not set(result.instances) & set(same) and len(result.instances) == 4
    assert all(f"{i}.json" not in rows(tmp_path / "a") for i in same)
    assert "0 (= 0)" in result.notes[0]

    # the policy's recorded instance seed and held-out instances count too
    meta_file = policy / "config.json"
    meta = json.loads(meta_file.read_text())
    meta["metadata"].update(instance_seed=7, train_instances=[1], heldout_instances=[2])
    meta_file.write_text(json.dumps(meta))
    seen = [make_instance(spec, i, 7).model_dump(exclude={"index", "seed"}) for i in (1, 2)]
    again = evaluate(config, tmp_path / "b", policy, games=3, seed=7)
    assert again.training.seed_from == "metadata.instance_seed"
    assert {s.index for s in again.skipped} >= {1, 2}
    for i in again.instances:
        assert make_instance(spec, i, 7).model_dump(exclude={"index", "seed"}) not in seen


def test_greedy_is_skipped_with_a_note_where_the_domain_has_none(tmp_path: Path) -> None:
    import solve_helpers  # noqa: F401 - registers test_mixed_2x2 (no greedy hook)

    config = live_config(tmp_path, "test_mixed_2x2")
    policy = live_policy(config, tmp_path / "policy")
    result = evaluate(config, tmp_path / "a", policy, games=2)
    assert result.baselines == ["any", "uniform"]
    assert any("greedy: skipped" in n and "no greedy hook" in n for n in result.notes)
    assert {s.baseline for s in result.stats} == {"any", "uniform"}
    row = LiveInstanceRow.model_validate_json(next(iter(rows(tmp_path / "a").values())))
    assert {d.condition for d in row.dialogues} == {"any", "policy", "uniform"}


KILLED_RUN = """
import sys, time
sys.argv = ["gtsteer", *sys.argv[1:]]
import live_helpers  # registers the domain
import gtsteer.runs.evaluate_live as live
played = live.play_instance

def slow(job, model):
    row = played(job, model)
    if job.instance.index != first:
        time.sleep(600)  # killed here: one instance saved, the next played but not saved
    return row

first = None
fresh = live.fresh_instances
def remember(*args):
    global first
    out = fresh(*args)
    first = out[0][0].index
    return out

live.play_instance, live.fresh_instances = slow, remember
from gtsteer.cli import app
app()
"""


def test_a_run_killed_mid_way_resumes_to_the_same_rows(
        config: Path, policy: Path, tmp_path: Path) -> None:
    args = ["evaluate", str(config), "--policy", str(policy), "--games", "4", "--samples", "2",
            "--llm", "fake"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{TESTS}"}
    killed = tmp_path / "killed"
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, *args, "--out", str(killed)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not list((killed / "instances").glob("*.json")):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no instance saved in 120 s"
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert len(rows(killed)) == 1 and (killed / "IN_PROGRESS").exists()
    assert not (killed / "evaluate.json").exists()
    kept = rows(killed)
    stamps = {p.name: p.stat().st_mtime_ns for p in (killed / "instances").glob("*.json")}

    whole = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "whole")])
    assert whole.exit_code == 0, whole.output
    resumed = CliRunner().invoke(app, [*args, "--out", str(killed), "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "resuming: 1 of 4 instances" in resumed.output
    assert rows(killed) == rows(tmp_path / "whole") and len(rows(killed)) == 4
    assert all(rows(killed)[name] == text for name, text in kept.items())
    assert all((killed / "instances" / name).stat().st_mtime_ns == stamp  # kept, not redone
               for name, stamp in stamps.items())
    first, second = (EvaluateLiveResult.model_validate_json(
        (folder / "evaluate.json").read_text()) for folder in (killed, tmp_path / "whole"))
    assert first.stats == second.stats and not (killed / "IN_PROGRESS").exists()
    # without --resume the folder starts again
    again = CliRunner().invoke(app, [*args, "--games", "2", "--out", str(killed)])
    assert again.exit_code == 0 and len(rows(killed)) == 2 and "resuming" not in again.output


@pytest.mark.parametrize(("extra", "problem"), [
    (["--policy", "/no/such/folder"], "not a policy directory"),
    (["--games", "0"], "--games"),
    (["--samples", "0"], "--samples"),
])
def test_bad_input_is_one_line(config: Path, tmp_path: Path, extra: list[str],
                               problem: str, policy: Path) -> None:
    args = ["evaluate", str(config), "--policy", str(policy), "--llm", "fake", "--out",
            str(tmp_path / "x"), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and problem in result.output, result.output
    assert not (tmp_path / "x" / "instances").exists()


def test_a_policy_without_its_training_instances_or_of_another_config_is_refused(
        config: Path, policy: Path, tmp_path: Path) -> None:
    meta_file = policy / "config.json"
    meta = json.loads(meta_file.read_text())
    del meta["metadata"]["train_instances"]
    meta_file.write_text(json.dumps(meta))
    result = CliRunner().invoke(app, ["evaluate", str(config), "--policy", str(policy),
                                      "--llm", "fake", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "names no training instances" in lines[0], result.output

    meta["metadata"]["train_instances"] = [0]
    meta["domain"] = "schedule_meeting_dow"
    meta_file.write_text(json.dumps(meta))
    other = CliRunner().invoke(app, ["evaluate", str(config), "--policy", str(policy),
                                     "--llm", "fake", "--out", str(tmp_path / "y")])
    assert other.exit_code == 2 and "trained on config 'schedule_meeting_dow'" in other.output
    assert "DomainMismatchError" in other.output and "--seat" not in other.output
    assert len([line for line in other.output.splitlines() if line.strip()]) == 1
    assert not (tmp_path / "x" / "instances").exists()


def test_units_shipped_like_ray_tasks_give_the_serial_rows(
        config: Path, policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--ray` hands each instance to the executor as one task: pickled with its function and
    run with a fresh client of the model (as a worker builds it) gives the serial rows."""
    import pickle

    import gtsteer.runs.executor
    from gtsteer.llm import LLM, LLMCalls
    from gtsteer.runs.units import UnitsRun

    shipped_units = []

    def shipped(work, units, model, *, ray=None, progress=False, label="", on_result=None):
        assert ray is not None
        values = []
        for i, unit in enumerate(units):
            task, unit = pickle.loads(pickle.dumps((work, unit)))
            shipped_units.append(unit.instance.index)
            values.append(task(unit, LLM(model.model, cache=model.cache)))
            if on_result is not None:
                on_result(i, values[-1])
        return UnitsRun(values, LLMCalls(), {})

    args = ["evaluate", str(config), "--policy", str(policy), "--games", "3", "--llm", "fake",
            "-q"]
    serial = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "serial")])
    assert serial.exit_code == 0, serial.output
    monkeypatch.setattr(gtsteer.runs.executor, "run_units", shipped)
    on_ray = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "ray"), "--ray", "local"])
    assert on_ray.exit_code == 0, on_ray.output
    assert len(shipped_units) == 3
    assert rows(tmp_path / "ray") == rows(tmp_path / "serial")
    first, second = (EvaluateLiveResult.model_validate_json((tmp_path / d / "evaluate.json")
                                                             .read_text()).stats
                     for d in ("serial", "ray"))
    assert first == second
