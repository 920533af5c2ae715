"""`gtsteer llm ask|info`: output shapes, caching across runs, and one-paragraph errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.cli.common import console
from gtsteer.llm import LLM

runner = CliRunner()


def ask(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["llm", "ask", *args])
    return result.exit_code, result.output


def test_ask_json_prints_text_cached_and_usage() -> None:
    code, out = ask("--model", "fake", "--seed", "3", "--json", "Propose a deal.")
    assert code == 0, out
    payload = json.loads(out)
    assert set(payload) == {"text", "cached", "usage"}
    assert payload["cached"] is False
    expected = LLM("fake", use_cache=False).generate_sync(
        "Propose a deal.", seed=3, temperature=0.7, max_tokens=64
    )
    assert payload["text"] == expected.text
    assert payload["usage"]["completion_tokens"] == len(expected.text.split())

    code, out = ask("--model", "fake", "--seed", "3", "--json", "Propose a deal.")
    assert code == 0, out
    again = json.loads(out)
    assert again["cached"] is True and again["text"] == payload["text"]


def test_ask_plain_prints_only_the_completion() -> None:
    code, out = ask("--model", "fake", "--seed", "1", "Hello there")
    assert code == 0, out
    text = LLM("fake", use_cache=False).generate_sync("Hello there", seed=1, max_tokens=64).text
    assert out == text + "\n"


def test_ask_with_choices_json() -> None:
    code, out = ask("--model", "fake", "--json", "--choices", "A, B,C", "Pick one.")
    assert code == 0, out
    payload = json.loads(out)
    assert set(payload["scores"]) == {"A", "B", "C"}
    assert payload["choice"] == max(payload["scores"], key=payload["scores"].get)
    assert payload["method"] == "hash"
    assert payload["usage"]["requests"] == 1


def test_ask_with_choices_plain_prints_choice_then_scores() -> None:
    code, out = ask("--model", "fake", "--choices", "logos,pathos,ethos", "Pick a style.")
    assert code == 0, out
    expected = LLM("fake", use_cache=False).choose_sync(
        "Pick a style.", ["logos", "pathos", "ethos"]
    )
    lines = out.splitlines()
    assert lines[0] == expected.choice
    for option in ("logos", "pathos", "ethos"):
        assert option in out
        assert f"{expected.scores[option]:.4f}" in out


@pytest.mark.parametrize(
    ("model", "needle"),
    [
        ("no-such-provider-xyz", "Unknown model string 'no-such-provider-xyz'"),
        ("local:/nonexistent.gguf", "Local model file not found: /nonexistent.gguf"),
    ],
    ids=["unknown-model", "missing-gguf"],
)
def test_bad_model_is_a_clear_error_without_traceback(model: str, needle: str) -> None:
    code, out = ask("--model", model, "Hello")
    assert code == 2
    flat = " ".join(out.split())  # rich wraps long lines
    assert needle in flat
    assert "ModelConfigError" in flat
    assert "Traceback" not in out


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, out = ask("--model", "openai/gpt-4o-mini", "Hello")
    assert code == 2
    assert "OPENAI_API_KEY" in out
    assert "Traceback" not in out


def test_info_shows_cache_dir_and_entries(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console, "width", 400)  # keep the long tmp path on one line
    assert ask("--model", "fake", "one")[0] == 0
    assert ask("--model", "fake", "two")[0] == 0
    assert ask("--model", "fake", "two")[0] == 0  # a hit adds no entry
    result = runner.invoke(app, ["llm", "info"])
    assert result.exit_code == 0, result.output
    rows = {
        cells[0]: cells[1]
        for line in result.output.splitlines()
        if len(cells := [c.strip() for c in line.strip("│┃ ").split("│")]) == 2
    }
    assert rows["cache dir"] == str(isolated_cache)
    assert rows["cache entries"] == "2"
    assert rows["cache size"].endswith("MB")
    assert "fake" in rows["backends"]
    assert "local:smollm2-135m" in rows["backends"]


def test_info_shows_local_model_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 400)
    monkeypatch.setenv("GTSTEER_LOCAL_THREADS", "3")
    monkeypatch.setenv("GTSTEER_LOCAL_PREFIX_CACHE_MB", "512")
    output = runner.invoke(app, ["llm", "info"]).output
    assert "3 (GTSTEER_LOCAL_THREADS)" in output
    assert "512 MB (GTSTEER_LOCAL_PREFIX_CACHE_MB)" in output


def test_python_dash_m_gtsteer_runs_the_same_cli(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gtsteer", "llm", "ask", "--model", "fake", "--seed", "3",
         "--json", "Propose a deal."],
        check=False, capture_output=True, text=True, timeout=120,
        env={"GTSTEER_CACHE_DIR": str(tmp_path),
             "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    expected = LLM("fake", use_cache=False).generate_sync(
        "Propose a deal.", seed=3, temperature=0.7, max_tokens=64)
    assert json.loads(out.stdout)["text"] == expected.text
