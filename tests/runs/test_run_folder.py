"""One function names a run's folder (`run_folder`) and drivers return the folder they wrote
(`RunResult.folder`), so the CLI never works it out a second time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import solve_helpers  # noqa: F401  (registers the test utility in this process)
from solve_helpers import MIXED_2X2
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.llm import LLM
from gtsteer.runs.output import RunDirError, run_dir, run_folder
from gtsteer.runs.solve_schema import SolveSummary


def test_run_folder_is_out_dir_when_given_else_the_default_of_its_kind(tmp_path: Path):
    assert run_folder("solve", "configs/fruit.yaml", "fake", 3, tmp_path / "x") == tmp_path / "x"
    assert run_folder("psro", "configs/fruit.yaml", "openai/gpt-4o-mini", 3) == Path(
        "results/fruit-psro-openai_gpt-4o-mini-3")
    # a client names the same folder as its model string
    assert run_folder("imitate", "c.yaml", LLM("fake"), 1) == run_dir(
        "imitate", "c.yaml", "fake", 1
    )


def test_solve_returns_the_folder_it_wrote(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = gtsteer.solve(MIXED_2X2, llm="fake", iterations=10, quiet=True)
    assert summary.folder == Path("results/mixed_2x2-fake-0")
    written = json.loads((summary.folder / "summary.json").read_text())
    assert written["model"] == "fake"
    # the folder is not part of the file: the schema is unchanged
    assert "folder" not in written and "_folder" not in written

    given = gtsteer.solve(MIXED_2X2, llm="fake", iterations=10, quiet=True, out=tmp_path / "o")
    assert given.folder == tmp_path / "o"


def test_a_summary_read_from_a_file_does_not_claim_a_folder(tmp_path: Path):
    summary = gtsteer.solve(MIXED_2X2, llm="fake", iterations=10, quiet=True, out=tmp_path)
    again = SolveSummary.model_validate_json((tmp_path / "summary.json").read_text())
    assert again == summary  # private attributes take no part in equality
    with pytest.raises(RunDirError, match="folder is unknown"):
        _ = again.folder


def test_the_cli_prints_the_folder_the_driver_returned(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["solve", str(MIXED_2X2), "--llm", "fake", "-k", "10", "-q"])
    assert result.exit_code == 0, result.output
    assert "results/mixed_2x2-fake-0/summary.json" in result.output.replace("\n", "")
