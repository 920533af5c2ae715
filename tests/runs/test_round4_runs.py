"""Run-level failures from the fourth reliability round (shared/reviews/reliability-0832c41.md):
psro with no instance expanded (M2), an unbounded Werewolf seed (L1), a fully resumed solve's
summary (L13) and `python -m lab table1` with a failing domain. Each was a traceback, a wrong value
or a wrong exit code."""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path

import pytest
from lab_support import lab
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.llm import LLM

ROOT = Path(__file__).resolve().parents[2]
FRUIT = str(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
runner = CliRunner()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


# ---- M2: psro with no instance expanded is one line, exit 2 -----------------------------


def test_psro_against_a_dead_server_is_one_line_naming_the_cause(tmp_path: Path) -> None:
    port = closed_port()
    result = runner.invoke(app, [
        "psro", FRUIT, "-q", "--iterations", "1", "--games", "2", "--llm", "openai/stub",
        "--api-base", f"http://127.0.0.1:{port}/v1", "--request-timeout", "2",
        "--max-wait", "0.1", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is not None
    [line] = error_lines(result.output)
    assert line.startswith("error: ExpansionError: no instance expanded (instance 0, 1):"
                           " message generation failed: openai/stub"), line
    assert f"connection refused by 127.0.0.1:{port}" in line


PLUGIN = """
from gtsteer.binding import Domain

async def utility(ctx):
    raise RuntimeError("utility exploded")

RAISES = Domain(name="round4_utility_raises", utility=utility)
"""

CONFIG = """
name: round4_bike
domain: round4_plugin:RAISES
players: [seller, buyer]
names: [Ada, Ben]
actions:
  stance: [firm, soft, any]
scenario: "{name0} sells a bike to {name1}."
message_prompt: "{scenario}\\n{transcript}{instruction}{name}:"
num_llm_seeds: 2
num_max_replies: 1
payoff: {min: 0, max: 10, prompt: "{transcript}"}
"""


def test_psro_whose_plugin_utility_raises_is_one_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "round4_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "bike.yaml").write_text(textwrap.dedent(CONFIG))
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(app, ["psro", str(tmp_path / "bike.yaml"), "-q", "--llm", "fake",
                                 "--iterations", "1", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    [line] = error_lines(result.output)
    assert line.startswith("error: ExpansionError: no instance expanded"), line
    assert "RuntimeError: utility exploded" in line


# ---- L1: a Werewolf seed is bounded to the web lobby's range ------------------------------


def refusal(output: str) -> str:
    return " ".join(output.replace("│", " ").split())  # without the box's borders


@pytest.mark.parametrize(("seed", "bound"), [("9223372036854775808", "less than or equal to"
                                              " 2147483647"),
                                             ("2147483648", "less than or equal to 2147483647"),
                                             ("-1", "greater than or equal to 0")])
def test_a_werewolf_seed_out_of_range_is_refused_before_the_game(tmp_path: Path, seed: str,
                                                                 bound: str) -> None:
    db = tmp_path / "ww.sqlite"
    result = runner.invoke(app, ["werewolf", "play", "--bots-only", "--players", "5", "--llm",
                                 "fake", "--seed", seed, "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not db.exists()
    assert f"Invalid value for '--seed': Input should be {bound}" in refusal(result.output)


@pytest.mark.parametrize("command", [["werewolf", "steer-train", "--games", "1"],
                                     ["werewolf", "evaluate"],
                                     ["python -m lab", "werewolf-heldout", "--policy", "nowhere"]])
def test_every_werewolf_seed_flag_is_bounded(tmp_path: Path, command: list[str]) -> None:
    from lab_support import lab

    where, argv = (lab, command[1:]) if command[0] == "python -m lab" else (app, command)
    result = runner.invoke(where, [*argv, "--llm", "fake", "--seed", str(2**64), "--out",
                                   str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert ("Invalid value for '--seed': Input should be less than or equal to 2147483647"
            in refusal(result.output))


def test_the_largest_werewolf_seed_plays(tmp_path: Path) -> None:
    db = tmp_path / "ww.sqlite"
    result = runner.invoke(app, ["werewolf", "play", "--bots-only", "--players", "5", "--llm",
                                 "fake", "--max-days", "1", "--max-messages", "2",
                                 "--seed", "2147483647", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert db.exists()


# ---- L13: a fully resumed solve writes the summary the first run wrote ---------------------


def test_a_fully_resumed_solve_keeps_the_solver_backend(tmp_path: Path) -> None:
    args = {"games": 2, "iterations": 50, "out": tmp_path / "run", "quiet": True}
    first = gtsteer.solve(FRUIT, llm=LLM("fake"), **args)
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    again = gtsteer.solve(FRUIT, llm=LLM("fake"), resume=True, **args)
    rewritten = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert first.solver_backend.startswith("open_spiel C++")
    assert again.solver_backend == first.solver_backend
    assert again.llm_calls.requests == 0  # nothing was solved again
    timing = {"llm_calls", "llm_cost_usd", "llm_modes", "wall_s", "created", "finished_at"}
    assert ({k: v for k, v in rewritten.items() if k not in timing}
            == {k: v for k, v in written.items() if k not in timing})


# ---- table1: a failed domain is a non-zero exit naming it ----------------------------------


def test_table1_exits_1_naming_the_domain_that_failed(tmp_path: Path) -> None:
    results = tmp_path / "res"
    results.mkdir()
    (results / "trade_fruit_tone").write_text("not a folder")  # the domain's run folder
    doc = tmp_path / "TABLE1.md"
    result = runner.invoke(lab, ["table1", "--llm", "fake", "--games", "1", "--samples", "0",
                                 "--quiet", "--results", str(results), "--doc", str(doc),
                                 FRUIT])
    assert result.exit_code == 1, result.output
    [line] = error_lines(result.output)
    assert line.startswith("error: 1 of 1 domains failed: trade_fruit_tone ("), line
    assert "| `trade_fruit_tone` | 2 | 0 / 1 | failed: " in doc.read_text()  # still written (S = 2)
