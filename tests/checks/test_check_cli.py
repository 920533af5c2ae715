"""`gtsteer check CONFIG` (issue 60 item 6): conformance, a fake-model playthrough, the tree
size and a dry-run cost in one report, for a shipped config and for one outside the
repository; a broken config names the check that failed and exits 1, bad input exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gtsteer.binding import Domain, RewardContext
from gtsteer.checks import read_playthrough, replay
from gtsteer.cli import app
from gtsteer.domains import game_from_params, register_domain

runner = CliRunner()

#: A YAML-only domain, as an author writes it outside the repository.
BIKES = {
    "name": "bike_haggle",
    "players": ["seller", "buyer"],
    "names": ["Ada", "Ben"],
    "actions": {"stance": ["firm", "soft", "any"]},
    "scenario": "{name0} sells a bike to {name1}.",
    "message_prompt": "{scenario}\n{transcript}{instruction}{name}:",
    "num_llm_seeds": 2,
    "num_max_replies": 1,
    "payoff": {"min": 0, "max": 10, "prompt": "{transcript}"},
}


async def one_payoff(ctx: RewardContext) -> list[float]:
    return [1.0]  # two players, one payoff: the domain's bug


register_domain(Domain(name="test_check_one_payoff", utility=one_payoff))


def check(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["check", *args, "--llm", "fake"])
    return result.exit_code, result.output


def assert_four_parts(out: str) -> None:
    assert "conformance: passed (pyspiel API, isolation, determinism)" in out
    assert "playthrough (fake model, instance 0):" in out
    assert "is told:" in out and "  payoffs: [" in out
    assert "game tree: at most" in out  # the line `solve` prints
    assert "dry run of solve (1 instance): nothing was sent." in out
    assert "cost: about $" in out


def test_a_shipped_config_passes_with_all_four_parts() -> None:
    code, out = check("schedule_meeting_dow")
    assert code == 0, out
    assert_four_parts(out)
    assert "player 0 (proposer) is told:" in out  # the config's roles and day instructions
    assert "game tree: at most 409 nodes and 528 LLM requests per instance" in out


def test_a_config_outside_the_repository_passes_with_overrides(tmp_path: Path) -> None:
    config = tmp_path / "bike_haggle.yaml"
    config.write_text(yaml.safe_dump(BIKES))
    code, out = check(str(config), "num_llm_seeds=1")
    assert code == 0, out
    assert_four_parts(out)
    # the override reached the run: 1 + 3 + 3 + 9 + 9 nodes with one sample per message (64
    # with the file's two)
    assert "game tree: at most 25 nodes and 21 LLM requests per instance" in out, out


def test_a_domain_with_the_wrong_number_of_payoffs_fails_naming_the_check(
    tmp_path: Path,
) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text(yaml.safe_dump({**BIKES, "domain": "test_check_one_payoff"}))
    code, out = check(str(config))
    assert code == 1, out
    assert "conformance: FAILED" in out, out
    assert "conformance check `random_sim_test` failed" in out  # the check, named
    assert "returned 1 payoffs for 2 players" in out  # and what it found
    assert "dry run" not in out


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, out = check(str(tmp_path / "missing.yaml"))
    assert code == 2, out
    assert "no such config file" in out
    broken = tmp_path / "unknown_field.yaml"
    prompt = "{scenario}\n{budget}\n{transcript}{instruction}{name}:"
    broken.write_text(yaml.safe_dump({**BIKES, "message_prompt": prompt}))
    code, out = check(str(broken))
    assert code == 2, out
    assert "message_prompt" in out and "budget" in out and "conformance" not in out


def test_record_writes_a_playthrough_of_a_config_outside_the_repository(tmp_path: Path) -> None:
    config = tmp_path / "bike_haggle.yaml"
    config.write_text(yaml.safe_dump(BIKES))
    recorded = tmp_path / "playthroughs" / "bike_haggle.txt"
    code, out = check(str(config), "--record", str(recorded))
    assert code == 0, out
    assert f"playthrough recorded: {recorded}" in out
    text = recorded.read_text(encoding="utf-8")
    parsed = read_playthrough(text)
    assert parsed.header["config"] == str(config) and parsed.header["model"] == "fake"
    # each player once: an instruction, then one of two samples of its message
    assert "Ada" in text and "returns: [" in text and len(parsed.actions) == 4
    # it replays from its own header, as the repository's recordings do
    assert replay(text, game_from_params(parsed.params())) == text


def test_a_message_prompt_without_the_instruction_is_a_warning_not_a_failure(
    tmp_path: Path,
) -> None:
    """No `{instruction}` in message_prompt: no instruction ever reaches the model, so every
    instruction plays the same; the warning tier says so and the check still passes."""
    from gtsteer.checks import CheckWarning, check_spec
    from gtsteer.domains import load_spec

    config = tmp_path / "deaf.yaml"
    deaf = {**BIKES, "message_prompt": "{scenario}\n{transcript}{name}:"}
    config.write_text(yaml.safe_dump(deaf))
    code, out = check(str(config))
    assert code == 0, out
    said = " ".join(out.split())
    assert ("deaf.yaml: message_prompt has no {instruction}: no instruction reaches the model"
            in said)
    assert "conformance: passed" in said and "  warning: " in out
    with pytest.warns(CheckWarning, match="no instruction reaches the model"):
        report = check_spec(load_spec(config), str(config))
    assert any("{instruction}" in w for w in report.warnings)
    # the shipped configs all place it
    code, out = check("schedule_meeting_dow")
    assert "no instruction reaches the model" not in out
