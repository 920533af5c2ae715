"""Served models as users run them, against loopback doubles of their servers.

llama.cpp's server (refuses `json_schema`, takes `json_object` with a schema), vLLM (OpenAI
shapes, `top_logprobs`) and ollama (`/api/chat`, `format`) are reproduced closely enough that
litellm sends and parses exactly what it would against the real thing; a real llama.cpp server
is exercised in tests/llm/test_llama_server.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from pathlib import Path
from typing import Any, Literal

import pytest
import typer
from pydantic import BaseModel
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM
from gtsteer.llm.backends.litellm_backend import first_token_scores
from gtsteer.llm.schema_fill import fill
from gtsteer.testing import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


class Vote(BaseModel):
    who: Literal["Akira", "Yuki"]


def schema_answer(body: dict[str, Any]) -> str:
    """A valid object for whichever schema the request carries, else plain text."""
    fmt = body.get("response_format") or {}
    schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema") or body.get("format")
    rng = random.Random(
        hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    )
    if not isinstance(schema, dict):  # the prompt mode: the schema is only in the prompt
        hint = str(body["messages"][-1]["content"])
        if "JSON schema:\n" not in hint:  # a message: one that names a day, as in the game
            return f"Let us meet on {rng.choice(DAYS)}."
        schema = json.loads(hint.split("JSON schema:\n", 1)[1])
    return json.dumps(fill(schema, rng))


def formats(server: LoopbackServer) -> list[str | None]:
    return [(b.get("response_format") or {}).get("type") for b in server.bodies]


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # A local server needs no key; none may leak in from the environment either.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def served(server: LoopbackServer, model: str = "openai/test-model", **kwargs: Any) -> LLM:
    return LLM(model, api_base=server.base_url, api_key="no-key", backoff_initial_s=0.01,
               **kwargs)


# ---- structured output: detected once per endpoint --------------------------------------------


def test_a_server_without_json_schema_costs_one_failed_request_per_endpoint() -> None:
    with LoopbackServer(0.2, schema_answer, rejected_formats=("json_schema",)) as srv:
        llm = served(srv)

        async def burst() -> list[Vote]:
            calls = [llm.structured(f"Vote, round {i}.", Vote) for i in range(6)]
            return [r.value for r in await asyncio.gather(*calls)]

        votes = asyncio.run(burst())
        assert all(v.who in ("Akira", "Yuki") for v in votes)
        # One refused json_schema request, then every request (the refused one again too)
        # goes as json_object with the schema, which llama.cpp's server turns into a grammar.
        assert formats(srv) == ["json_schema"] + ["json_object"] * 6
        # Only the probe ran alone: the requests that waited for it went out together.
        assert srv.max_in_flight > 1
        assert srv.bodies[-1]["response_format"]["schema"] == Vote.model_json_schema()
        assert llm.usage.retries == 0 and llm.usage.failures == 0
        assert llm.capabilities()["structured_output"] == "json_object"
        # Another client of the same endpoint (a second model role) does not ask again.
        other = served(srv)
        other.structured_sync("Vote, round 7.", Vote)
        assert formats(srv)[-1] == "json_object" and srv.requests == 8


def test_a_server_refusing_both_formats_gets_the_schema_in_the_prompt() -> None:
    with LoopbackServer(
        responder=schema_answer, rejected_formats=("json_schema", "json_object")
    ) as srv:
        llm = served(srv)
        assert llm.structured_sync("Vote.", Vote).value.who in ("Akira", "Yuki")
        llm.structured_sync("Vote again.", Vote)
    assert formats(srv) == ["json_schema", "json_object", None, None]
    assert "JSON schema" in srv.bodies[-1]["messages"][-1]["content"]
    assert llm.capabilities()["structured_output"] == "prompt"


def test_a_429_with_retry_after_is_waited_out() -> None:
    with LoopbackServer() as srv:
        srv.fail_next(1, 429, retry_after="1")
        llm = served(srv)  # its own backoff would retry after about 0.01 s
        assert llm.generate_sync("Rate limited", seed=1).text == "echo seed=1: Rate limited"
        assert srv.requests == 2
        assert srv.arrivals[1] - srv.arrivals[0] >= 1.0
        assert llm.usage.retries == 1


def test_a_full_solve_against_a_llama_cpp_shaped_server(tmp_path: Path) -> None:
    """The README job through `--api-base`: one refused json_schema request in the whole run,
    and the mode it settled on recorded in summary.json."""
    config = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
    out = tmp_path / "run"
    with LoopbackServer(responder=schema_answer, rejected_formats=("json_schema",)) as srv:
        result = runner.invoke(app, ["solve", str(config), "--llm", "openai/smollm2", "--api-base",
                                     srv.base_url, "--games", "1", "-k", "20", "-q",
                                     "--out", str(out)])
        assert result.exit_code == 0, result.output
        refused = formats(srv).count("json_schema")
        sent = srv.requests
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["num_solved"], summary["model"]) == (1, "openai/smollm2")
    assert refused == 1
    assert summary["llm_modes"]["structured_output"] == "json_object"
    assert summary["llm_calls"]["new_calls"] == sent - refused


# ---- choose: the server's log-probabilities where it returns them -----------------------------


def capitals(body: dict[str, Any]) -> list[tuple[str, float]]:
    return [("Paris", -0.2), ("The", -1.9), ("Rome", -2.6), ("R", -4.0)]


def test_vllm_choose_reads_top_logprobs() -> None:
    with LoopbackServer(top_logprobs=capitals) as srv:
        llm = served(srv, "hosted_vllm/test-model")
        result = llm.choose_sync("The capital of France?", ["Rome", "Paris"])
        assert (result.method, result.choice) == ("loglik", "Paris")
        assert result.scores == {"Rome": -2.6, "Paris": -0.2}
        body = srv.bodies[0]
        assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
        assert "Answer with exactly one of: Rome, Paris." in body["messages"][-1]["content"]
        assert srv.requests == 1
        assert llm.capabilities()["choice"] == "loglik"


def test_vllm_structured_output_goes_as_json_schema() -> None:
    with LoopbackServer(responder=schema_answer) as srv:
        llm = served(srv, "hosted_vllm/test-model")
        assert llm.structured_sync("Vote.", Vote).value.who in ("Akira", "Yuki")
    fmt = srv.bodies[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["who"]["enum"] == ["Akira", "Yuki"]
    assert srv.requests == 1


def test_options_the_top_tokens_cannot_tell_apart_get_a_constrained_choice() -> None:
    top = {" propose": -0.1, "I": -2.0}
    assert first_token_scores(top, ["propose Monday", "propose Tuesday"]) is None
    assert first_token_scores({"x": -1.0}, ["Paris", "Rome"]) is None
    # An option outside the top alternatives scores their floor, an upper bound on its own.
    assert first_token_scores({"Par": -0.5, "The": -3.0}, ["Paris", "Rome"]) == {
        "Paris": -0.5, "Rome": -3.0}

    def answer(body: dict[str, Any]) -> str:
        return '{"choice": "propose Tuesday"}' if body.get("response_format") else "propose"

    with LoopbackServer(responder=answer, top_logprobs=lambda body: [(" propose", -0.1)]) as srv:
        llm = served(srv, "hosted_vllm/test-model")
        result = llm.choose_sync("Which day?", ["propose Monday", "propose Tuesday"])
    assert (result.method, result.choice) == ("constrained", "propose Tuesday")
    assert srv.requests == 2


def test_ollama_structured_output_and_a_choice_without_logprobs() -> None:
    def answer(body: dict[str, Any]) -> str:
        return '{"choice": "Rome"}' if "choice" in json.dumps(body.get("format")) else (
            schema_answer(body))

    with LoopbackServer(responder=answer) as srv:
        llm = LLM("ollama_chat/test-model", api_base=f"http://127.0.0.1:{srv.port}",
                  backoff_initial_s=0.01)
        assert llm.structured_sync("Vote.", Vote).value.who in ("Akira", "Yuki")
        first = llm.choose_sync("Capital of Italy?", ["Paris", "Rome"])
        second = llm.choose_sync("Capital of Lazio?", ["Paris", "Rome"])
    assert set(srv.paths) == {"/api/chat"}
    # litellm sends the schema as ollama's `format`.
    assert srv.bodies[0]["format"]["properties"]["who"]["enum"] == ["Akira", "Yuki"]
    assert (first.method, first.choice, second.method) == ("constrained", "Rome", "constrained")
    # litellm's ollama_chat drops `logprobs` (the probe went without) and sends the seed as
    # ollama's `options.seed`; the probe found none once, later choices skip it.
    probe = srv.bodies[1]
    assert "logprobs" not in probe and probe["options"]["num_predict"] == 1
    assert probe["options"]["seed"] == 0
    assert srv.requests == 1 + 2 + 1
    assert llm.capabilities() == {"structured_output": "json_schema", "choice": "constrained"}


# ---- the flags: every command with --llm takes --api-base and --api-key-env -------------------


def _commands(group: Any, prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (typer may bring its own click)
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def test_every_command_with_a_model_takes_the_endpoint_flags() -> None:
    commands = _commands(typer.main.get_command(app))  # type: ignore[arg-type]
    with_model = {
        name: {opt for p in c.params for opt in p.opts}
        for name, c in commands.items()
        if any(opt in ("--llm", "--model") for p in c.params for opt in p.opts)
    }
    assert {"solve", "psro", "imitate", "instances", "eval steering", "eval reward",
            "eval verdict", "llm ask", "werewolf play"} <= set(with_model)
    lacking = sorted(n for n, opts in with_model.items()
                     if not {"--api-base", "--api-key-env", "--request-timeout",
                             "--max-wait"} <= opts
                     and n != "werewolf serve")
    assert lacking == []


def test_api_key_env_names_the_variable_that_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVER_TOKEN", "token-from-env-4242")
    with LoopbackServer() as srv:
        result = runner.invoke(app, ["llm", "ask", "--model", "openai/test-model", "--api-base",
                                     srv.base_url, "--api-key-env", "MY_SERVER_TOKEN", "Hello"])
    assert result.exit_code == 0, result.output
    assert result.output == "echo seed=0: Hello\n"
    assert srv.authorizations == ["Bearer token-from-env-4242"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--llm", "fake", "--api-base", "http://127.0.0.1:9/v1"], "apply to served models"),
        (["--llm", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--api-key-env",
          "GTSTEER_NO_SUCH_VAR"], "--api-key-env GTSTEER_NO_SUCH_VAR"),
    ],
    ids=["api-base-with-fake", "unset-key-variable"],
)
def test_endpoint_flag_mistakes_are_one_line_errors(args: list[str], message: str) -> None:
    config = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
    result = runner.invoke(app, ["solve", str(config), *args, "-q"])
    assert result.exit_code == 2
    assert message in result.output


def test_a_served_model_without_a_key_sends_the_placeholder_as_the_cli_does() -> None:
    """`LLM(model, api_base=...)` with no key and no OPENAI_API_KEY: the OpenAI SDK still needs
    some key, so the client sends the placeholder the CLI sends (`no-key`), instead of failing
    every try as a "status 500"."""
    with LoopbackServer(0.0, schema_answer) as srv:
        llm = LLM("openai/test-model", api_base=srv.base_url, max_retries=0, use_cache=False)
        assert llm.generate_sync("Pick a day.").text.startswith("Let us meet on")
        assert srv.authorizations == ["Bearer no-key"]
