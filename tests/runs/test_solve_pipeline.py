"""`gtsteer.solve` end to end on a domain with a known equilibrium (real binding, real CFR)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from solve_helpers import MIXED_2X2, MOVES, PAYOFF, ConstantBackend

import gtsteer
from gtsteer.binding import ConfigError
from gtsteer.llm import LLM
from gtsteer.runs.output import run_dir


def constant_llm() -> tuple[LLM, ConstantBackend]:
    backend = ConstantBackend()
    return LLM(backend=backend), backend


def write_spec(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load(MIXED_2X2.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("solver", ["cfr", "cfr+"])
def test_recovers_known_mixed_equilibrium(tmp_path: Path, solver: str) -> None:
    llm, _ = constant_llm()
    summary = gtsteer.solve(MIXED_2X2, llm=llm, games=2, iterations=3000, solver=solver,
                            out=tmp_path, quiet=True)
    assert summary.failures == [] and summary.instances == [0, 1]
    assert summary.solver_backend.startswith("open_spiel C++")
    first = {d.role: d.probs for d in summary.instruction_distribution}
    assert first["proposer"] == pytest.approx({"a": 1 / 3, "b": 2 / 3, "any": 0.0}, abs=0.02)
    assert first["responder"] == pytest.approx({"a": 2 / 3, "b": 1 / 3, "any": 0.0}, abs=0.02)
    metrics = summary.metrics
    assert metrics is not None
    assert max(metrics.nash_conv.per_instance) < 0.01
    assert metrics.cfr_gain_normalized.mean == pytest.approx(2.0 / 6, abs=0.01)  # range [-3, 3]
    # CFR gain: proposer vs `any` earns 3 instead of 0; responder vs `any` earns 1 instead of 0.
    assert metrics.cfr_gain.mean == pytest.approx(2.0, abs=0.02)
    h2h = summary.head_to_head
    assert h2h is not None
    assert h2h.strategies == ["cfr", "any", "always:a", "always:b", "uniform"]
    assert h2h.values["any"]["any"] == 0.0
    # (M[a,b] - M[b,a]) / 2
    assert h2h.values["always:a"]["always:b"] == pytest.approx((2.0 + -1.0) / 2)
    # The games file holds the policy per information state with instruction labels.
    record = json.loads((tmp_path / "games" / "0.json").read_text())
    assert record["status"] == "solved" and record["instance"]["index"] == 0
    proposer = [p for p in record["policy"] if p["player"] == 0]
    assert len(proposer) == 1 and proposer[0]["probs"]["b"] == pytest.approx(2 / 3, abs=0.02)
    assert record["values"]["cfr_gain_per_player"] == pytest.approx([3.0, 1.0], abs=0.03)
    assert record["values"]["value_cfr"] == pytest.approx([2 / 3, -2 / 3], abs=0.02)  # game value


def test_terminals_file_holds_every_dialogue_and_its_payoff(tmp_path: Path) -> None:
    llm, _ = constant_llm()
    gtsteer.solve(MIXED_2X2, llm=llm, games=1, iterations=10, out=tmp_path, quiet=True)
    record = json.loads((tmp_path / "games" / "0.json").read_text())
    lines = (tmp_path / "games" / "0.terminals.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == record["expansion"]["terminal_nodes"] > 0
    assert len({tuple(r["history"]) for r in rows}) == len(rows)
    for row in rows:
        first, second = (t["instruction"] for t in row["turns"])
        assert [t["speaker"] for t in row["turns"]] == record["instance"]["names"]
        paid = PAYOFF[MOVES.index(first)][MOVES.index(second)]
        assert row["returns"] == [paid, -paid] and row["verdict"] is None and row["deal"] is None
    # every instruction pair is there, each once per pair of LLM samples
    assert {(r["turns"][0]["instruction"], r["turns"][1]["instruction"]) for r in rows} == {
        (a, b) for a in MOVES for b in MOVES}


def test_one_iteration_nash_conv_by_hand(tmp_path: Path) -> None:
    # After one CFR iteration the average policy is uniform over {a, b, any} for both. The
    # proposer's rows then earn 5/3, 4/3, -2/3 (mean 7/9): best-response gain 8/9. The
    # responder's columns earn 0, -1/3, -2 (mean -7/9): gain 7/9. NashConv = 15/9 = 5/3.
    llm, _ = constant_llm()
    summary = gtsteer.solve(MIXED_2X2, llm=llm, games=1, iterations=1, solver="cfr", out=tmp_path,
                            quiet=True)
    assert summary.metrics is not None
    assert summary.metrics.nash_conv.mean == pytest.approx(5 / 3)
    # Normalised by players x range: (5/3) / (2 x 6).
    assert summary.metrics.nash_conv_normalized.mean == pytest.approx(5 / 36)


def test_rerun_makes_no_new_calls_and_same_numbers(tmp_path: Path) -> None:
    llm, backend = constant_llm()
    first = gtsteer.solve(MIXED_2X2, llm=llm, games=2, iterations=300, out=tmp_path, quiet=True)
    calls = backend.calls
    assert first.llm_calls.new_calls == calls > 0
    text = (tmp_path / "summary.json").read_text()

    llm2, backend2 = constant_llm()  # a fresh client: only the on-disk cache is shared
    second = gtsteer.solve(MIXED_2X2, llm=llm2, games=2, iterations=300, out=tmp_path, quiet=True)
    assert backend2.calls == 0
    assert second.llm_calls.new_calls == 0
    assert second.llm_calls.cache_hits == second.llm_calls.requests > 0
    assert second.numbers() == first.numbers()
    again = json.loads((tmp_path / "summary.json").read_text())
    before = json.loads(text)
    before.pop("llm_calls"), again.pop("llm_calls")
    assert again == before


def test_failed_instance_is_listed_and_others_finish(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, params={"fail_instances": [1]})
    llm, _ = constant_llm()
    summary = gtsteer.solve(spec, llm=llm, games=3, iterations=200, out=tmp_path / "o", quiet=True)
    assert summary.instances == [0, 2]
    assert [(f.instance, f.stage) for f in summary.failures] == [(1, "expand")]
    assert "reward model unavailable" in summary.failures[0].reason
    assert summary.metrics is not None and summary.metrics.cfr_gain.n == 2
    record = json.loads((tmp_path / "o" / "games" / "1.json").read_text())
    assert record["status"] == "failed" and "unavailable" in record["failure"]
    assert record["values"] is None


def test_any_exception_stays_inside_its_instance(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, params={"crash_instances": [1]})
    llm, _ = constant_llm()
    out = tmp_path / "o"
    summary = gtsteer.solve(spec, llm=llm, games=3, iterations=100, out=out, quiet=True)
    assert summary.instances == [0, 2]
    assert (summary.num_solved, summary.num_failed) == (2, 1)
    assert [(f.instance, f.stage) for f in summary.failures] == [(1, "expand")]
    assert summary.failures[0].reason == "ZeroDivisionError: utility bug (injected)"
    assert json.loads((out / "summary.json").read_text())["num_failed"] == 1


def test_a_metric_failure_is_recorded_with_its_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyspiel

    import gtsteer.runs.solve as driver

    real = driver.analyze
    calls = []

    def flaky(game, *args):
        calls.append(1)
        if len(calls) == 2:
            raise pyspiel.SpielError("Does State::ToString() not distinguish ...")
        return real(game, *args)

    monkeypatch.setattr(driver, "analyze", flaky)
    llm, _ = constant_llm()
    summary = gtsteer.solve(MIXED_2X2, llm=llm, games=2, iterations=50, out=tmp_path, quiet=True)
    assert [(f.instance, f.stage) for f in summary.failures] == [(1, "metrics")]
    assert summary.failures[0].reason.startswith("SpielError: Does State")
    record = json.loads((tmp_path / "games" / "1.json").read_text())
    assert record["status"] == "failed" and record["policy"] == [] and record["values"] is None


def test_exit_code_is_nonzero_only_when_every_instance_fails(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gtsteer.cli import app

    runner = CliRunner()
    some = write_spec(tmp_path, params={"crash_instances": [0]})
    result = runner.invoke(app, ["solve", str(some), "--llm", "fake", "-n", "2", "-k", "20",
                                 "-o", str(tmp_path / "some")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 of 2 instances failed" in result.output
    every = tmp_path / "every"
    every.mkdir()
    allfail = write_spec(every, params={"crash_instances": [0, 1]})
    result = runner.invoke(app, ["solve", str(allfail), "--llm", "fake", "-n", "2", "-k", "20",
                                 "-q", "-o", str(tmp_path / "all")])  # fmt: skip
    assert result.exit_code == 1
    summary = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert summary["num_failed"] == 2 and summary["metrics"] is None


def test_a_failure_reason_is_printed_verbatim_not_as_markup(tmp_path: Path) -> None:
    """The CLI prints through rich: an unescaped reason would lose `[ray]` and crash on `[/]`."""
    from typer.testing import CliRunner

    from gtsteer.cli import app

    reason = "bad slot [ray] in table [/] here"
    spec = write_spec(tmp_path, params={"crash_instances": [0], "crash_message": reason})
    result = CliRunner().invoke(app, ["solve", str(spec), "--llm", "fake", "-n", "2", "-k", "20",
                                      "-q", "-o", str(tmp_path / "o")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert f"ZeroDivisionError: {reason}" in result.output


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"num_llm_seeds": None}, "num_llm_seeds"), ({"num_llm_seed": 2}, "num_llm_seed")],
)
def test_bad_config_fails_before_any_llm_call(tmp_path: Path, changes: dict, field: str) -> None:
    spec = write_spec(tmp_path, **changes)
    llm, backend = constant_llm()
    with pytest.raises(ConfigError, match=field):
        gtsteer.solve(spec, llm=llm, games=1, out=tmp_path / "o", quiet=True)
    assert backend.calls == 0 and llm.usage.requests == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"games": 0}, "games"), ({"iterations": 0}, "iterations"), ({"solver": "x"}, "solver")],
)
def test_bad_arguments_fail_before_any_llm_call(tmp_path: Path, kwargs: dict, field: str) -> None:
    llm, backend = constant_llm()
    with pytest.raises(ValueError, match=field):
        gtsteer.solve(MIXED_2X2, llm=llm, out=tmp_path, quiet=True, **kwargs)
    assert backend.calls == 0


def test_default_out_dir_is_path_safe() -> None:
    assert run_dir("solve", "gtsteer/configs/trade_fruit_tone.yaml", "local", 0) == Path(
        "results/trade_fruit_tone-local-0"
    )
    assert run_dir("solve", "x.yaml", "openai/gpt-4o-mini", 3).name == "x-openai_gpt-4o-mini-3"
