"""litellm over real HTTP against a loopback OpenAI-compatible server.

Backoff, retries, timeouts, bounded concurrency, structured output and secret hygiene are
checked against what the server actually received.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from gtsteer.llm import LLM, LLMCallError, ModelConfigError
from gtsteer.testing import LoopbackServer

MODEL = "openai/test-model"


class Vote(BaseModel):
    who: Literal["Akira", "Yuki"]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    with LoopbackServer() as srv:
        yield srv


def make_llm(server: LoopbackServer, **kwargs: Any) -> LLM:
    params: dict[str, Any] = {"api_base": server.base_url, "backoff_initial_s": 0.01}
    return LLM(MODEL, **{**params, **kwargs})


def test_completion_over_http(server: LoopbackServer) -> None:
    llm = make_llm(server)
    result = llm.generate_sync("Name a fruit.", seed=7, temperature=0.3, max_tokens=12)
    assert result.text == "echo seed=7: Name a fruit."
    assert result.cached is False
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 5)
    assert result.usage.latency_s > 0
    assert server.requests == 1
    assert server.paths == ["/v1/chat/completions"]
    body = server.bodies[0]
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "user", "content": "Name a fruit."}]
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (7, 0.3, 12)
    assert server.authorizations == ["Bearer sk-test-dummy"]


def test_chat_messages_and_stop_are_forwarded(server: LoopbackServer) -> None:
    llm = make_llm(server)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    llm.generate_sync(messages, stop=["\n"])
    assert server.bodies[0]["messages"] == messages
    assert server.bodies[0]["stop"] == ["\n"]


def test_second_identical_call_never_reaches_the_server(server: LoopbackServer) -> None:
    llm = make_llm(server)
    first = llm.generate_sync("Cache me", seed=1)
    second = llm.generate_sync("Cache me", seed=1)
    assert second.cached is True and second.text == first.text
    assert server.requests == 1
    llm.generate_sync("Cache me", seed=2)
    assert server.requests == 2


@pytest.mark.parametrize(
    ("failures", "expected_requests"),
    [([429, 429], 3), ([500], 2), ([503, 429], 3)],
    ids=["two-429", "one-500", "503-then-429"],
)
def test_transient_errors_are_retried_with_backoff(
    server: LoopbackServer, failures: list[int], expected_requests: int
) -> None:
    for status in failures:
        server.fail_next(1, status)
    llm = make_llm(server)
    result = llm.generate_sync("Retry me", seed=1)
    assert result.text == "echo seed=1: Retry me"
    assert server.requests == expected_requests
    usage = llm.usage
    assert usage.retries == len(failures)
    assert (usage.new_calls, usage.failures) == (1, 0)


def test_retries_exhausted_raise_a_typed_error(server: LoopbackServer) -> None:
    server.fail_next(10, 500)
    llm = make_llm(server, max_retries=2)
    with pytest.raises(LLMCallError) as info:
        llm.generate_sync("Doomed")
    assert info.value.attempts == 3
    assert "gave up after 3 tries" in str(info.value)
    assert "500" in str(info.value)
    assert server.requests == 3
    assert (llm.usage.retries, llm.usage.failures, llm.usage.new_calls) == (2, 1, 0)
    assert llm.cache is not None and len(llm.cache) == 0


def test_a_400_is_not_retried(server: LoopbackServer) -> None:
    server.fail_next(1, 400)
    llm = make_llm(server, max_retries=4)
    with pytest.raises(LLMCallError) as info:
        llm.generate_sync("Bad request")
    assert info.value.attempts == 1
    assert "400" in str(info.value)
    assert server.requests == 1
    assert llm.usage.retries == 0


def test_concurrency_is_bounded_by_max_concurrency(server: LoopbackServer) -> None:
    server.latency_s = 0.2
    llm = make_llm(server, max_concurrency=4, use_cache=False)

    async def burst() -> list[str]:
        results = await asyncio.gather(*(llm.generate(f"request {i}", seed=i) for i in range(16)))
        return [r.text for r in results]

    texts = asyncio.run(burst())
    assert len(set(texts)) == 16
    assert server.requests == 16
    assert 1 < server.max_in_flight <= 4


def test_client_timeout_becomes_a_retry_then_a_typed_error(server: LoopbackServer) -> None:
    # A timeout of a second leaves a loaded machine time to deliver each request (at 0.25 s a
    # busy CPU made the client give up before the server had read one).
    server.latency_s = 4.0
    llm = make_llm(server, timeout_s=1.0, max_retries=1)
    with pytest.raises(LLMCallError) as info:
        llm.generate_sync("Too slow")
    assert info.value.attempts == 2
    assert server.requests == 2
    assert llm.usage.retries == 1
    assert llm.cache is not None and len(llm.cache) == 0


def test_structured_output_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    replies = iter(['{"who": "Zed"}', '{"who": "Akira"}'])
    with LoopbackServer(responder=lambda body: next(replies)) as srv:
        llm = make_llm(srv)
        result = llm.structured_sync("Vote.", Vote, seed=4)
        assert result.value == Vote(who="Akira")
        assert result.attempts == 2
        first, second = srv.bodies
        schema = first["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["who"]["enum"] == ["Akira", "Yuki"]
        assert "JSON schema" in first["messages"][-1]["content"]
        # A plain prompt travels as one user message; the feedback is appended to it.
        retry = second["messages"][-1]["content"]
        assert 'Your previous answer was: {"who": "Zed"}' in retry
        assert "`who` must be one of: Akira, Yuki" in retry
        again = llm.structured_sync("Vote.", Vote, seed=4)
        assert again.cached is True and srv.requests == 2


def test_choose_without_logprobs_is_a_constrained_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    def answer(body: dict[str, Any]) -> str:
        return '{"choice": "pathos"}' if "pathos" in json.dumps(body) else '{"choice": "calm"}'

    with LoopbackServer(responder=answer) as srv:
        llm = make_llm(srv)
        result = llm.choose_sync("Pick a style.", ["logos", "pathos", "ethos"])
        again = llm.choose_sync("Pick a style.", ["logos", "pathos", "ethos"])
        # The first choice asked for log-probabilities (and got none): later ones don't.
        assert [bool(b.get("logprobs")) for b in srv.bodies] == [True, False]
        llm.choose_sync("Pick a tone.", ["calm", "angry"])
        assert srv.requests == 3 and not srv.bodies[-1].get("logprobs")
    assert result.method == "constrained"
    assert result.choice == "pathos"
    assert result.scores == {"logos": 0.0, "pathos": 1.0, "ethos": 0.0}
    assert again.cached is True and again.choice == "pathos"
    # One choice is one metered request (the inner structured call is not counted twice);
    # the probe that found no log-probabilities is a call of its own.
    usage = llm.usage
    assert (usage.requests, usage.cache_hits, usage.new_calls) == (3, 1, 3)


def test_the_cache_never_contains_a_secret(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path
) -> None:
    key = "sk-SECRET-env-key-31337"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with_query = f"http://127.0.0.1:{server.port}/v1?key=QUERY-SECRET-777"
    llm = LLM(MODEL, api_base=with_query, max_retries=0)
    assert llm.generate_sync("Keep my secrets").cached is False
    assert server.authorizations == [f"Bearer {key}"]  # the key did travel over the wire
    assert "QUERY-SECRET-777" in server.paths[0]
    # Credentials in the URL: depending on the HTTP transport this call succeeds or is refused
    # (a bearer key next to URL credentials); either way nothing secret may be stored.
    with_userinfo = f"http://alice:PASSWORD-SECRET-42@127.0.0.1:{server.port}/v1"
    with contextlib.suppress(LLMCallError, ModelConfigError):
        LLM(MODEL, api_base=with_userinfo, max_retries=0).generate_sync("Keep them too")
    assert len(llm.cache or []) in (1, 2)

    files = [p for p in isolated_cache.rglob("*") if p.is_file()]
    assert any(p.name == "cache.db" for p in files)
    blob = b"".join(p.read_bytes() for p in files)
    for secret in (key, "QUERY-SECRET-777", "PASSWORD-SECRET-42", "alice"):
        assert secret.encode() not in blob, secret
    # The stored answer is really there (the scan looked at the right bytes).
    assert json.dumps("echo seed=0: Keep my secrets")[1:-1].encode() in blob


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        LLM("openai/gpt-4o-mini")


def test_unknown_model_string_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="Unknown model string 'no-such-provider-xyz'"):
        LLM("no-such-provider-xyz")


def test_cost_comes_from_litellms_cost_map(server: LoopbackServer) -> None:
    """A model litellm knows is priced from its bundled cost map; usage adds up per run."""
    import litellm

    llm = LLM("openai/gpt-4o-mini", api_base=server.base_url)
    first = llm.generate_sync("Price me", seed=1)
    llm.generate_sync("Price me too", seed=1)
    price = litellm.model_cost["gpt-4o-mini"]
    expected = (
        first.usage.prompt_tokens * price["input_cost_per_token"]
        + first.usage.completion_tokens * price["output_cost_per_token"]
    )
    assert first.usage.cost_usd == pytest.approx(expected)
    assert first.usage.cost_usd > 0
    usage = llm.usage
    assert usage.new_calls == 2 and usage.latency_s > 0
    assert usage.prompt_tokens == 2 + 3 and usage.cost_usd > first.usage.cost_usd
    # The unknown loopback model has no price: cost 0, not an error.
    assert make_llm(server).generate_sync("free").usage.cost_usd == 0.0


def test_provider_error_text_is_scrubbed_of_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Error messages reach stderr and results files, so credentials are removed first."""
    from gtsteer.llm.backends.litellm_backend import _classify

    monkeypatch.setenv("OPENAI_API_KEY", "env-secret-value-123")

    class BadRequestError(Exception):
        status_code = 400

    exc = BadRequestError(
        "bad request to https://bob:hunter2pass@api.example/v1?api-key=QSECRET99&x=1 "
        "with key sk-abcdefghijkl0123 and header env-secret-value-123"
    )
    message = str(_classify(exc))
    for secret in ("hunter2pass", "QSECRET99", "sk-abcdefghijkl0123", "env-secret-value-123"):
        assert secret not in message
    assert "api.example/v1" in message and "x=1" in message and "status 400" in message
