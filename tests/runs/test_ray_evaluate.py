"""`gtsteer evaluate --ray`: one Ray task per fresh instance on a real Ray node gives the
serial run's rows and gains, and a rerun on Ray makes no model call."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_helpers import live_config, live_policy
from ray_support import one_node
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.runs.evaluate_live import EvaluateLiveResult


def test_on_ray_equals_serial_and_a_rerun_makes_no_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = live_config(tmp_path)
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "serial-cache"))
    policy = live_policy(config, tmp_path / "policy")
    args = ["evaluate", str(config), "--policy", str(policy), "--games", "3", "--samples", "2",
            "--llm", "fake", "-q"]

    def run(out: str, *extra: str) -> tuple[dict[str, str], EvaluateLiveResult]:
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / out), *extra])
        assert result.exit_code == 0, result.output
        rows = {p.name: p.read_text() for p in (tmp_path / out / "instances").glob("*.json")}
        return rows, EvaluateLiveResult.model_validate_json(
            (tmp_path / out / "evaluate.json").read_text())

    serial_rows, serial = run("serial")
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "ray-cache"))
    with one_node(cpus=2):
        ray_rows, on_ray = run("ray", "--ray", "local")
        again_rows, again = run("again", "--ray", "local")
    assert len(serial_rows) == 3 and ray_rows == serial_rows == again_rows
    assert on_ray.stats == serial.stats
    assert on_ray.llm_calls == serial.llm_calls and serial.llm_calls.new_calls > 0
    assert again.llm_calls.new_calls == 0
