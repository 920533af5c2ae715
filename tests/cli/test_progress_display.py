"""Issue 60, item 7: one progress display per command that says where the run is (instance
counter, phase, requests against the tree estimate, ETA), `-q` that prints only the final
summary, and one LLM usage line per command (the demo printed two)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import gtsteer.cli.spend as spend
from gtsteer.cli import app

ROOT = Path(__file__).resolve().parents[2]
MEETING = str(ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml")
FRUIT = str(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
ENV = {"COLUMNS": "120"}


def frames(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """Capture stderr's display as a terminal would draw it."""
    buffer = io.StringIO()
    monkeypatch.setattr(spend, "err_console",
                        Console(file=buffer, force_terminal=True, width=200))
    return buffer


def drawn(buffer: io.StringIO) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", buffer.getvalue())


def test_solve_shows_one_display_with_instance_counter_phases_and_eta(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = frames(monkeypatch)
    result = CliRunner().invoke(app, ["solve", MEETING, "--llm", "fake", "--games", "2",
                                      "--out", str(tmp_path / "run")], env=ENV)
    assert result.exit_code == 0, result.output
    text = drawn(buffer)
    for where in ("solve · instance 1/2 · expand", "solve · instance 2/2 · expand",
                  "instance 1/2 · solve (cfr+)", "instance 2/2 · metrics"):
        assert where in text
    # requests against the tree estimate (1,056 for 2 instances), and an ETA field
    assert re.search(r"\d+/≤1,056 requests · ETA \d+:\d\d:\d\d · \d+:\d\d:\d\d", text)
    # one display: no per-level bars left on stdout
    assert "depth" not in result.stdout and "messages" not in result.stdout


def test_quiet_prints_only_the_final_summary(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = frames(monkeypatch)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["solve", MEETING, "--llm", "fake", "--games", "2",
                                      "-q", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"summary: {out / 'summary.json'}\n"
    # stderr: the usage line only (no tree-size note, no display)
    [line] = drawn(buffer).strip().splitlines()
    assert line.startswith("LLM: 544 requests, ")


@pytest.mark.parametrize("argv", [
    ["solve", MEETING, "--games", "1"],  # `make demo`'s command, on the fake model
    ["export", FRUIT, "--games", "1"],
    ["eval", "reward", FRUIT, "--cases", "2"],
])
def test_a_command_prints_one_llm_usage_line(argv: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*argv, "--llm", "fake", "--out", str(tmp_path / "o")],
                                env=ENV)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "LLM:" in line]
    assert len(lines) == 1 and re.match(r"LLM: \d+ requests, \d+ new calls, ", lines[0]), lines
