"""`gtsteer solve` through typer's CliRunner, and determinism across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import solve_helpers  # noqa: F401  (registers the test utility in this process)
from solve_helpers import MIXED_2X2
from typer.testing import CliRunner

from gtsteer.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"


def test_cli_writes_summary_with_schema_fields(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["solve", str(MIXED_2X2), "--llm", "fake", "--games", "2", "--iterations", "200"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    # (the summary's path may wrap at 80 columns: its words are read unwrapped)
    assert "summary.json" in "".join(result.output.split()) and "head-to-head" in result.output
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "config", "model", "seed", "solver", "iterations", "solver_backend", "metrics",
        "head_to_head", "instruction_distribution", "llm_calls", "failures", "clipped_rewards",
    ):  # fmt: skip
        assert key in summary, key
    assert summary["model"] == "fake" and summary["iterations"] == 200
    assert summary["solver"] == "cfr+" and summary["instances"] == [0, 1]
    assert set(summary["llm_calls"]) == {"requests", "cache_hits", "new_calls"}
    assert len(summary["metrics"]["cfr_gain"]["per_instance"]) == 2
    assert sorted(p.name for p in (out / "games").iterdir()) == [
        "0.json", "0.terminals.jsonl", "1.json", "1.terminals.jsonl"]

    again = runner.invoke(app, [*args, "--out", str(out), "--quiet"])
    assert again.exit_code == 0
    assert json.loads((out / "summary.json").read_text())["llm_calls"]["new_calls"] == 0


def test_cli_default_out_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-k", "10", "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "results" / "mixed_2x2-fake-0" / "summary.json").exists()


def test_cli_bad_config_field_exits_2_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(MIXED_2X2.read_text().replace("num_max_replies: 1", "num_max_replies: -1"))
    result = runner.invoke(app, ["solve", str(bad), "--llm", "fake", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "num_max_replies" in result.output
    assert not (tmp_path / "o").exists()


def test_cli_exits_1_when_every_instance_fails(tmp_path: Path) -> None:
    spec = tmp_path / "failing.yaml"
    spec.write_text(MIXED_2X2.read_text().replace("fail_instances: []", "fail_instances: [0]"))
    out = tmp_path / "o"
    result = runner.invoke(app, ["solve", str(spec), "--llm", "fake", "-q", "--out", str(out)])
    assert result.exit_code == 1
    assert "instance 0 failed" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"] is None and summary["failures"][0]["instance"] == 0


def test_cli_missing_config_and_bad_solver_exit_2(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["solve", str(tmp_path / "nope.yaml"), "--llm", "fake"])
    assert missing.exit_code == 2 and "nope.yaml" in missing.output
    solver = runner.invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "--solver", "dcfr"])
    assert solver.exit_code == 2 and "solver: expected one of cfr, cfr+" in solver.output


SOLVE_IN_SUBPROCESS = """
import json, sys
import gtsteer
s = gtsteer.solve(sys.argv[1], llm="fake", games=2, iterations=300, out=sys.argv[2], quiet=True)
print(json.dumps(s.numbers(), sort_keys=True))
"""


def test_same_numbers_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    outputs = []
    for hash_seed in ("1", "987"):
        env = {
            **os.environ,
            "PYTHONHASHSEED": hash_seed,
            "GTSTEER_CACHE_DIR": str(tmp_path / f"cache-{hash_seed}"),  # each run calls afresh
        }
        proc = subprocess.run(
            [sys.executable, "-c", SOLVE_IN_SUBPROCESS, str(FRUIT), str(tmp_path / hash_seed)],
            check=False, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outputs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert outputs[0]["metrics"]["cfr_gain"]["per_instance"]  # something was solved
    assert outputs[0] == outputs[1]


def test_tables_never_print_negative_zero() -> None:
    from gtsteer.cli.common import signed

    assert signed(-1e-9) == "+0.0000"
    assert signed(-0.25, 3) == "-0.250"
    assert signed(0.4375, 3) == "+0.438"


def test_head_to_head_of_ten_strategies_prints_every_value_in_full_at_80_columns() -> None:
    import io
    import re

    from rich.console import Console

    from gtsteer.cli.solve import print_head_to_head
    from gtsteer.evals.solve_metrics import HeadToHead

    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    names = ["cfr", "any", *(f"always:{d}" for d in days), "uniform"]
    values = {r: {c: (10 * i + j) / 40 - 1.2 for j, c in enumerate(names)}
              for i, r in enumerate(names)}
    out = Console(width=80, file=io.StringIO(), record=True)
    print_head_to_head(HeadToHead(strategies=names, values=values), out)
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "+0.75" in text and "always:" not in text and "…" not in text
    for r, label in zip(names, ["cfr", "any", *days, "uniform"], strict=True):
        # the row's cells, in column order, across every chunk of columns
        shown = [n for line in text.splitlines() if line.startswith(f"│ {label} ")
                 for n in re.findall(r"[+-]\d+\.\d\d", line)]
        assert shown == [f"{round(values[r][c], 2) + 0.0:+.2f}" for c in names], label
