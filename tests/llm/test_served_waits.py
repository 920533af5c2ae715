"""What a failed try of a served model says, which failures are retried, and how long waits are.

Connection refused, a cut JSON body and credentials in the URL used to read alike
("InternalServerError (status 500)") and were all retried 5 times; a 429 could hold a run 300 s
per retry and a hung server 120 s per try, in silence. Each failure now names what happened, a
URL no try can succeed with is refused before anything is sent, `--request-timeout` and
`--max-wait` bound the waits, and the running wait shows in the progress display.
"""

from __future__ import annotations

import socket
import time

import pytest
from typer.testing import CliRunner

from gtsteer.binding.progress import Display
from gtsteer.cli import app
from gtsteer.llm import LLM, LLMCallError, ModelConfigError
from gtsteer.testing import LoopbackServer

runner = CliRunner()


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def served(base: str, **kwargs: object) -> LLM:
    return LLM("openai/stub", api_base=base, api_key="no-key", backoff_initial_s=0.01,
               **kwargs)  # type: ignore[arg-type]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_says_so() -> None:
    port = closed_port()
    with pytest.raises(LLMCallError) as caught:
        served(f"http://127.0.0.1:{port}/v1", max_retries=1).generate_sync("Hello")
    message = str(caught.value)
    assert f"connection refused by 127.0.0.1:{port}" in message
    assert "status 500" not in message and "gave up after 2 tries" in message


@pytest.mark.parametrize(("fault", "said"), [
    ("badjson", "the body is not valid JSON"),
    ("html", "the body is not a chat completion"),
    ("close", "the connection closed before an answer"),
])
def test_a_broken_answer_says_what_broke(fault: str, said: str) -> None:
    with LoopbackServer() as srv:
        srv.fault_next(2, fault)
        with pytest.raises(LLMCallError) as caught:
            served(srv.base_url, max_retries=1).generate_sync("Hello")
    assert said in str(caught.value) and "status 500" not in str(caught.value)


def test_a_real_server_error_names_its_http_status() -> None:
    with LoopbackServer() as srv:
        srv.fail_next(2, 503)
        with pytest.raises(LLMCallError, match=r"server error \(HTTP 503\)"):
            served(srv.base_url, max_retries=1).generate_sync("Hello")


@pytest.mark.parametrize(("base", "said"), [
    ("ftp://127.0.0.1:1/v1", "the scheme must be http or https, got 'ftp'"),
    ("http://alice:pw@127.0.0.1:1/v1", "the URL holds credentials (user:password@)"),
])
def test_a_url_no_try_can_succeed_with_is_refused_before_sending(base: str, said: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        served(base)
    assert said in str(caught.value) and "pw" not in str(caught.value)


def test_max_wait_bounds_a_servers_retry_after() -> None:
    with LoopbackServer() as srv:
        srv.fail_next(1, 429, retry_after="100000")
        start = time.monotonic()
        text = served(srv.base_url, max_wait_s=0.5).generate_sync("Rate limited", seed=1).text
        elapsed = time.monotonic() - start
    assert text == "echo seed=1: Rate limited"
    assert 0.5 <= elapsed < 5


def test_request_timeout_bounds_one_try() -> None:
    with LoopbackServer(latency_s=3.0) as srv:
        start = time.monotonic()
        with pytest.raises(LLMCallError, match=r"no answer within 0\.5 s \(--request-timeout\)"):
            served(srv.base_url, timeout_s=0.5, max_retries=1).generate_sync("Slow")
    assert time.monotonic() - start < 2.5


def test_the_running_wait_shows_in_the_progress_display() -> None:
    with LoopbackServer() as srv:
        srv.fail_next(1, 429, retry_after="2")
        llm = served(srv.base_url)
        shown: list[str] = []
        import threading

        display = Display("run", None)  # the progress display's line, right of its bar

        def watch() -> None:
            for _ in range(40):
                text = display.right_text()
                if "rate limited" in text:
                    shown.append(text.split(" · ")[-1])
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        llm.generate_sync("Rate limited")
        watcher.join()
    assert shown, "no wait was shown"
    assert shown[0].startswith("openai/stub: rate limited (HTTP 429); try 2 of 5 in ")
    assert "rate limited" not in display.right_text()  # gone once answered


def test_the_cli_takes_request_timeout_and_max_wait() -> None:
    with LoopbackServer() as srv:
        srv.fail_next(1, 429, retry_after="100000")
        start = time.monotonic()
        result = runner.invoke(app, ["llm", "ask", "--model", "openai/stub", "--api-base",
                                     srv.base_url, "--max-wait", "0.2", "--request-timeout",
                                     "30", "Hello"])
    assert result.exit_code == 0, result.output
    assert result.output == "echo seed=0: Hello\n"
    assert time.monotonic() - start < 10
