"""`key=value` overrides, `--show-config` and every run folder's `provenance.json` (issue 60,
item 4)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gtsteer import __version__
from gtsteer.cli import app

runner = CliRunner()
CONFIG = "schedule_meeting_dow"


@pytest.fixture(autouse=True)
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache"))


def shown(*overrides: str) -> dict[str, Any]:
    result = runner.invoke(app, ["solve", CONFIG, *overrides, "--show-config"])
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.stdout)


def test_each_kind_of_field_is_overridden_and_validated() -> None:
    base = shown()
    assert base["num_max_replies"] == 1 and base["generation"]["temperature"] == 0.7
    assert shown("num_max_replies=2")["num_max_replies"] == 2  # int
    assert shown("generation.temperature=0.5")["generation"] == {"max_tokens": 48,  # float
                                                                 "temperature": 0.5}
    names = shown("names=[Ann, Ben, Cy]")["names"]  # list
    assert names == ["Ann", "Ben", "Cy"]
    generation = shown("generation={max_tokens: 32, temperature: 0.2}")["generation"]
    assert generation == {"max_tokens": 32, "temperature": 0.2}  # a nested mapping, whole
    text = shown("scenario=Two friends pick a day.")["scenario"]  # a string with spaces
    assert text == "Two friends pick a day."
    both = shown("num_max_replies=2", "generation.max_tokens=20")
    assert both["num_max_replies"] == 2 and both["generation"]["max_tokens"] == 20


@pytest.mark.parametrize(("override", "message"), [
    ("nonsense=3", "field `nonsense`: unknown field"),
    ("num_max_replies=abc", "field `num_max_replies`: Input should be a valid integer"),
    ("generation.temprature=0.5", "field `generation.temprature`: unknown field"),
    ("num_max_replies.x=1", "num_max_replies is a int, not a mapping"),
    ("num_max_replies", "write it as FIELD=VALUE"),
])
def test_a_bad_override_is_one_line_naming_the_field(override: str, message: str) -> None:
    result = runner.invoke(app, ["solve", CONFIG, override, "--llm", "fake"])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_overrides_reach_the_run() -> None:
    """The tree the run counts follows num_llm_seeds (the game-size line on stderr)."""
    def requests(*overrides: str) -> int:
        result = runner.invoke(app, ["solve", CONFIG, *overrides, "--llm", "fake", "--dry-run"])
        assert result.exit_code == 0, result.output
        return int(re.search(r"and ([\d,]+) LLM requests", result.output)[1].replace(",", ""))

    assert requests("num_llm_seeds=1") < requests() / 3


def test_the_run_folder_holds_its_provenance(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["solve", CONFIG, "generation.temperature=0.5", "names=[Ann, Ben]", "--llm", "fake",
            "--seed", "7", "-k", "3", "-q", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads((out / "provenance.json").read_text())
    assert record["command"] == "solve" and record["kind"] == "solve"
    assert record["config_given"] == CONFIG
    assert record["overrides"] == ["generation.temperature=0.5", "names=[Ann, Ben]"]
    resolved = record["resolved_config"]
    assert resolved["generation"]["temperature"] == 0.5 and resolved["names"] == ["Ann", "Ben"]
    assert record["params"]["seed"] == 7 and record["seed"] == 7
    assert record["params"]["iterations"] == 3
    assert record["model"] == "fake" and record["models_given"] == {"writer": "fake"}
    assert record["gtsteer_version"] == __version__
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", record["git_commit"])  # tests run in a checkout
    # the instances were dealt from the overridden names
    game = json.loads((out / "games" / "0.json").read_text())
    assert set(re.findall(r"\b(Ann|Ben|Alice|Bob)\b", json.dumps(game))) <= {"Ann", "Ben"}


def numbers(folder: Path) -> dict[str, Any]:
    from gtsteer.runs.solve_schema import SolveSummary

    return SolveSummary.model_validate_json((folder / "summary.json").read_text()).numbers()


def test_an_out_holding_another_run_is_refused_and_the_same_run_resumes(tmp_path: Path) -> None:
    """An explicit --out whose provenance.json names another command or another resolved
    config is refused in one line (exit 2) and left as it was; the same run again, and with
    --resume, writes into it as before."""
    out = tmp_path / "run"
    solve = ["solve", CONFIG, "--llm", "fake", "-k", "3", "-q", "--out", str(out)]
    first = runner.invoke(app, solve)
    assert first.exit_code == 0, first.output
    summary = (out / "summary.json").read_bytes()
    numbers_first = numbers(out)

    other_config = runner.invoke(app, [*solve[:2], "num_llm_seeds=1", *solve[2:]])
    assert other_config.exit_code == 2, other_config.output
    said = " ".join(other_config.output.split())
    assert (f"--out {out}: holds the results of another solve run (its provenance.json: another"
            " resolved config of schedule_meeting_dow)") in said
    assert "choose another --out, or remove the folder" in said

    other_command = runner.invoke(app, ["export", CONFIG, "--llm", "fake", "-q",
                                        "--out", str(out)])
    assert other_command.exit_code == 2, other_command.output
    said = " ".join(other_command.output.split())
    assert (f"--out {out}: holds the results of another run (its provenance.json: a solve run,"
            " not export)") in said
    assert (out / "summary.json").read_bytes() == summary and not (out / "IN_PROGRESS").exists()

    for again in (solve, [*solve, "--resume"]):  # the same run: a rerun, as resume works
        result = runner.invoke(app, again)
        assert result.exit_code == 0, result.output
        assert numbers(out) == numbers_first
