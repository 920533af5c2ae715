"""The meta-solver registry: one dict entry is all a new meta-solver needs. The CLI's help, the
accepted `--meta-solver` values and the stop rule all come from `META_SOLVERS`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.solvers.meta import META_SOLVERS, MetaSolution, MetaSolver, product
from gtsteer.solvers.psro import PSROConfig

FRUIT = "gtsteer/configs/trade_fruit_tone.yaml"
runner = CliRunner()


def uniform(stack: np.ndarray, _inputs: object) -> MetaSolution:
    """Every player mixes its strategies uniformly (a test's own meta-solver)."""
    return MetaSolution.of("uniform", product([np.full(n, 1 / n) for n in stack.shape[1:]]),
                           product=True)


@pytest.fixture
def with_uniform(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(META_SOLVERS, "uniform", MetaSolver(uniform, "nothing_added",
                                                             help="every instruction alike"))


def test_a_registered_meta_solver_is_in_the_help(with_uniform: None) -> None:
    shown = runner.invoke(app, ["psro", "--help"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0
    assert "rd | nash | cce | mecce | nbs | uniform" in " ".join(shown.output.split())
    assert "uniform: every instruction alike" in " ".join(shown.output.split())


def test_a_registered_meta_solver_drives_psro(with_uniform: None, tmp_path: Path) -> None:
    done = runner.invoke(app, ["psro", FRUIT, "--llm", "fake", "--iterations", "1",
                               "--candidates", "2", "--meta-solver", "uniform", "--out",
                               str(tmp_path), "--quiet"])
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    first = summary["iterations"][0]
    assert summary["settings"]["meta_solver"] == "uniform" and first["driver"] == "uniform"
    assert first["stop_rule"] == "nothing_added"  # the entry's stop rule
    assert list(first["solutions"]) == ["rd", "cce", "mecce", "nbs", "uniform"]
    assert first["solutions"]["uniform"]["marginals"][0] == {a: 0.25 for a in
                                                             first["populations"][0]}


def test_an_unknown_meta_solver_names_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="'rd', 'nash', 'cce', 'mecce' or 'nbs'"):
        PSROConfig(meta_solver="lemke")


def test_the_built_in_entries_keep_their_players_and_stop_rules() -> None:
    assert META_SOLVERS["nash"].players == 2 and META_SOLVERS["rd"].players is None
    assert {n: s.stop_rule for n, s in META_SOLVERS.items()} == {
        "rd": "gap", "nash": "gap", "cce": "gap", "mecce": "gap", "nbs": "nothing_added"}
