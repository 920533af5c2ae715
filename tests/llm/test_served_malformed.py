"""Malformed 200 answers from a served model: a named error, retried, never a traceback.

A proxy or an overloaded server may answer 200 with `"choices": []`, a null message content,
or log-probabilities without values; each is a `MalformedResponseError` naming what was
missing, retried like a 5xx, and the run's usual one-line failure after the last try.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM, LLMCallError
from gtsteer.testing import LoopbackServer

runner = CliRunner()


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def served(srv: LoopbackServer, **kwargs: object) -> LLM:
    return LLM("openai/stub", api_base=srv.base_url, api_key="no-key", backoff_initial_s=0.01,
               **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fault", "named"),
    [
        ("emptychoices", "the answer has no choices"),
        ("nullcontent", "the message's content is null"),
    ],
)
def test_a_malformed_answer_is_retried_then_named(fault: str, named: str) -> None:
    with LoopbackServer() as srv:
        srv.fault_next(1, fault)
        llm = served(srv)
        assert llm.generate_sync("Hello", seed=2).text == "echo seed=2: Hello"
        assert srv.requests == 2 and llm.usage.retries == 1
        srv.fault_next(3, fault)
        with pytest.raises(LLMCallError) as caught:
            served(srv, max_retries=2).generate_sync("Hello again")
    message = str(caught.value)
    assert f"malformed response from openai/stub at {srv.base_url}: {named}" in message
    assert "gave up after 3 tries" in message


def test_logprobs_without_a_logprob_are_a_malformed_answer() -> None:
    with LoopbackServer(top_logprobs=lambda body: [("Paris", -0.1), ("Rome", -2.0)]) as srv:
        srv.fault_next(3, "badlp")
        with pytest.raises(LLMCallError, match="its logprobs cannot be read"):
            served(srv, max_retries=2).choose_sync("The capital of France is", ["Paris", "Rome"])
        srv.fault_next(1, "badlp")
        picked = served(srv).choose_sync("The capital of France is", ["Paris", "Rome"])
    assert (picked.choice, picked.method) == ("Paris", "loglik")


def test_llm_ask_against_an_endpoint_without_choices_is_one_line() -> None:
    with LoopbackServer() as srv:
        srv.fault_next(100, "emptychoices")
        # every try fails the same way: short waits between them (the default backs off ~10 s)
        result = runner.invoke(app, ["llm", "ask", "--model", "openai/stub", "--api-base",
                                     srv.base_url, "--max-wait", "0.05", "Hello"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is not None
    assert "malformed response from openai/stub" in result.output
    assert "the answer has no choices" in result.output
