"""A non-finite payoff is never read as a number (review reliability-0832c41, L4): `max(lo, nan)`
is `lo`, so a NaN answer or utility became a silent 0, uncounted as clipped, and was cached.
A reward model's NaN is a malformed answer (retried with feedback, never cached); a utility's
NaN is a bug in code, which fails the instance naming the domain and the utility."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.testing import LoopbackServer

runner = CliRunner()

SPEC = {
    "name": "bike_haggle_l4",
    "players": ["seller", "buyer"],
    "names": ["Ada", "Ben"],
    "actions": {"stance": ["firm", "soft", "any"]},
    "scenario": "{name0} sells a bike to {name1}.",
    "message_prompt": "{scenario}\n{transcript}{instruction}{name}:",
    "num_llm_seeds": 1,
    "num_max_replies": 1,
    "payoff": {"min": 0, "max": 10, "prompt": "{transcript}"},
}

#: What the retry feedback says about a NaN (pydantic's `allow_inf_nan=False` message).
FINITE = "Input should be a finite number"


def reward_model(nan_until_told: bool) -> Any:
    """A served reward model answering `NaN` for Ada: always, or until feedback names it."""

    def respond(body: dict[str, Any]) -> str:
        if not body.get("response_format"):
            return "I will sell it for five."
        told = FINITE in str(body["messages"][-1].get("content", ""))
        ada = "7.0" if told and nan_until_told else "NaN"
        return f'{{"ada": {ada}, "ben": 3.0}}'

    return respond


def solve(config: Path, srv: LoopbackServer, out: Path) -> Any:
    return runner.invoke(app, ["solve", str(config), "--llm", "openai/stub", "--api-base",
                               srv.base_url, "--games", "1", "-q", "-o", str(out),
                               "--max-wait", "0.1"])


def cached_answers(cache_dir: Path) -> str:
    """Every value the response cache holds, as text."""
    texts = []
    for db in cache_dir.rglob("*.db"):
        with sqlite3.connect(db) as conn:
            query = "SELECT name FROM sqlite_master WHERE type='table'"
            for (table,) in conn.execute(query).fetchall():
                texts += [repr(row) for row in conn.execute(f"SELECT * FROM {table}")]
    return "\n".join(texts)


@pytest.fixture
def config(tmp_path: Path, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "bike.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


def test_a_nan_reward_answer_is_retried_with_feedback_and_not_cached(
        config: Path, tmp_path: Path, isolated_cache: Path) -> None:
    with LoopbackServer(responder=reward_model(nan_until_told=True)) as srv:
        result = solve(config, srv, tmp_path / "out")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["num_solved"] == 1 and summary["clipped_rewards"] == 0
    terminals = (tmp_path / "out" / "games" / "0.terminals.jsonl").read_text().splitlines()
    assert terminals and all(json.loads(t)["raw"] == [7.0, 3.0] for t in terminals)
    retries = [b for b in srv.bodies if FINITE in str(b["messages"][-1].get("content", ""))]
    assert retries  # the NaN answer was sent back, the problem named
    stored = cached_answers(isolated_cache).replace("\\", "")
    assert '"ada": 7.0' in stored and "NaN" not in stored


def test_a_reward_model_that_only_answers_nan_fails_the_instance_and_caches_nothing(
        config: Path, tmp_path: Path, isolated_cache: Path) -> None:
    with LoopbackServer(responder=reward_model(nan_until_told=False)) as srv:
        result = solve(config, srv, tmp_path / "bad")
    assert "instance 0 failed (expand)" in result.output, result.output
    assert "reward of terminal" in result.output and "finite number" in result.output
    assert "NaN" not in cached_answers(isolated_cache)
    # A good reward model afterwards is asked again: no NaN answer was kept to replay.
    with LoopbackServer(responder=reward_model(nan_until_told=True)) as srv:
        result = solve(config, srv, tmp_path / "good")
    assert result.exit_code == 0, result.output
    assert any(b.get("response_format") for b in srv.bodies)
    summary = json.loads((tmp_path / "good" / "summary.json").read_text())
    assert summary["num_solved"] == 1


def test_a_utility_returning_nan_fails_the_instance_naming_the_domain(
        tmp_path: Path, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nan_plugin_l4.py").write_text(textwrap.dedent('''
        from gtsteer.binding import Domain

        async def nan_utility(ctx):
            return [float("nan"), 1.0]

        NAN_UTIL = Domain(name="nan_util_l4", utility=nan_utility)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "nan.yaml"
    config.write_text(yaml.safe_dump({**SPEC, "domain": "nan_plugin_l4:NAN_UTIL"}))
    result = runner.invoke(app, ["solve", str(config), "--llm", "fake", "--games", "1", "-q",
                                 "-o", str(tmp_path / "out")])
    assert "instance 0 failed (expand)" in result.output, result.output
    assert ("the utility of domain 'nan_util_l4' (nan_plugin_l4.nan_utility) returned a"
            " non-finite payoff [nan, 1.0]") in " ".join(result.output.split())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["num_solved"] == 0 and summary["num_failed"] == 1
