"""`--api-mode completions` (issue 60 item 5): a served base model gets its plain text prompt on
`/v1/completions` instead of chat messages; chat stays the default. Against the loopback
OpenAI-compatible server, which records the route each request took."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.testing import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def answer(body: dict[str, Any]) -> str:
    from test_llm_serving import schema_answer

    return schema_answer(body)


def solve(srv: LoopbackServer, out: Path, *extra: str, config: str | Path = FRUIT) -> Any:
    result = runner.invoke(app, ["solve", str(config), "--llm", "openai/test-model", "--api-base",
                                 srv.base_url, "-k", "20", "-q", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text())


def shape(summary: dict[str, Any]) -> tuple[Any, ...]:
    from gtsteer.runs.solve_schema import SolveSummary

    return tuple(sorted(SolveSummary.model_validate(summary).numbers().items()))


def test_completions_mode_sends_the_plain_prompt_to_v1_completions_and_caches_apart(
        tmp_path: Path) -> None:
    with LoopbackServer(responder=answer) as srv:
        chat = solve(srv, tmp_path / "chat")
        chat_bodies = list(srv.bodies)
        assert set(srv.paths) == {"/v1/chat/completions"}  # chat stays the default
        srv.reset_counters()

        text = solve(srv, tmp_path / "text", "--api-mode", "completions")
        assert srv.requests > 0  # chat's cached answers are not completions' answers
        assert set(srv.paths) == {"/v1/completions"}
        assert all("prompt" in b and "messages" not in b for b in srv.bodies)
        # the plain prompt, no chat template: what chat sent as its one user message
        chat_prompts = {b["messages"][0]["content"] for b in chat_bodies
                        if len(b["messages"]) == 1}
        assert {b["prompt"] for b in srv.bodies} <= chat_prompts
        assert not any("<|im_start|>" in b["prompt"] or "User:" in b["prompt"]
                       for b in srv.bodies)
        assert shape(text) == shape(chat)  # the same game, the same answers: the same numbers

        srv.reset_counters()
        solve(srv, tmp_path / "again", "--api-mode", "completions")
        assert srv.requests == 0  # its own cache entries


def test_a_config_role_can_name_completions_and_a_flag_wins(tmp_path: Path) -> None:
    data = yaml.safe_load(FRUIT.read_text())
    with LoopbackServer(responder=answer) as srv:
        data["models"] = {"writer": {"model": "openai/test-model", "api_base": srv.base_url,
                                     "api_mode": "completions"}}
        config = tmp_path / "base_model.yaml"
        config.write_text(yaml.safe_dump(data))
        result = runner.invoke(app, ["solve", str(config), "-k", "20", "-q", "--out",
                                     str(tmp_path / "a")])
        assert result.exit_code == 0, result.output
        assert srv.requests > 0 and set(srv.paths) == {"/v1/completions"}
        srv.reset_counters()
        result = runner.invoke(app, ["solve", str(config), "-k", "20", "-q", "--api-mode",
                                     "chat", "--out", str(tmp_path / "b")])
        assert result.exit_code == 0, result.output
        assert srv.requests > 0 and set(srv.paths) == {"/v1/chat/completions"}


def test_api_mode_is_refused_for_in_process_models_and_unknown_modes(tmp_path: Path) -> None:
    fake = runner.invoke(app, ["solve", str(FRUIT), "--llm", "fake", "--api-mode", "completions",
                               "-q", "--out", str(tmp_path / "o")])
    assert fake.exit_code == 2 and "--api-mode apply to served models" in fake.output
    odd = runner.invoke(app, ["solve", str(FRUIT), "--llm", "openai/x", "--api-mode", "text",
                              "-q", "--out", str(tmp_path / "o")])
    assert odd.exit_code == 2
    assert "--api-mode: expected one of chat, completions, got 'text'" in odd.output


def test_every_command_that_names_a_model_takes_api_mode() -> None:
    import typer
    from test_llm_serving import _commands

    commands = _commands(typer.main.get_command(app))  # type: ignore[arg-type]
    with_base = {name for name, c in commands.items()
                 if any("--api-base" in p.opts for p in c.params)}
    assert len(with_base) > 10
    lacking = sorted(name for name in with_base
                     if not any("--api-mode" in p.opts for p in commands[name].params))
    assert lacking == []
