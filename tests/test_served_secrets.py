"""The key in use never leaves the process: not in errors, stderr, result files or the cache.

A served model's error (or answer) may quote the request's `Authorization` header. The key
sent is scrubbed wherever text leaves the LLM layer, whatever the name of the variable it came
from (the review's `SERVERPASS` case: a name without `_KEY`/`_TOKEN`/`_SECRET`).
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.bench.servers import LoopbackServer
from gtsteer.cli import app
from gtsteer.llm import LLM, LLMCallError
from gtsteer.llm.backends.litellm_backend import scrub_secrets

ROOT = Path(__file__).resolve().parents[1]
KEY = "hunter2hunter2hunter2"
runner = CliRunner()


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SERVERPASS", KEY)


def _files_text(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()
                   and p.suffix in (".json", ".jsonl", ".txt", ""))


@pytest.mark.parametrize("fault", ["echo400", "echo500"])
def test_an_error_quoting_the_key_is_scrubbed_everywhere(fault: str) -> None:
    with LoopbackServer() as srv:
        srv.fault_next(10, fault)
        llm = LLM("openai/stub", api_base=srv.base_url, api_key=KEY, max_retries=1,
                  backoff_initial_s=0.01)
        with pytest.raises(LLMCallError) as caught:
            llm.generate_sync("Hello")
    assert srv.authorizations[0] == f"Bearer {KEY}"  # the server did quote what it got
    assert "upstream failed for Bearer ***" in str(caught.value)
    # The whole traceback, chained causes included (what an unexpected crash would print).
    shown = "".join(traceback.format_exception(caught.value))
    assert KEY not in shown


def test_a_solve_against_a_server_echoing_the_key_stores_no_key(tmp_path: Path) -> None:
    config = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
    out = tmp_path / "run"
    with LoopbackServer() as srv:
        srv.fault_next(1000, "echo400")
        result = runner.invoke(app, ["solve", str(config), "--llm", "openai/stub", "--api-base",
                                     srv.base_url, "--api-key-env", "SERVERPASS", "--games", "1",
                                     "--iterations", "10", "-q", "--out", str(out)])
    assert srv.authorizations and srv.authorizations[0] == f"Bearer {KEY}"
    summary = json.loads((out / "summary.json").read_text())
    reason = summary["failures"][0]["reason"]
    assert "upstream failed for Bearer ***" in reason
    assert KEY not in result.output
    assert KEY not in _files_text(out)


def test_an_answer_quoting_the_key_is_cached_without_it(isolated_cache: Path) -> None:
    with LoopbackServer() as srv:
        srv.fault_next(1, "echo200")
        llm = LLM("openai/stub", api_base=srv.base_url, api_key=KEY)
        text = llm.generate_sync("Hello").text
    assert text == "you sent Bearer ***"
    blob = b"".join(p.read_bytes() for p in isolated_cache.rglob("*") if p.is_file())
    assert b"you sent Bearer ***" in blob  # the scan read the stored answer
    assert KEY.encode() not in blob


def test_bearer_tokens_and_authorization_headers_are_scrubbed() -> None:
    text = ("401 for Authorization: Bearer abc.DEF-123_xyz, retry with "
            "{'authorization': 'Basic dXNlcjpwYXNz'} or x-api-key: QWERTY123456")
    cleaned = scrub_secrets(text)
    for secret in ("abc.DEF-123_xyz", "dXNlcjpwYXNz", "QWERTY123456"):
        assert secret not in cleaned, cleaned
    assert cleaned.startswith("401 for Authorization: Bearer ***")


def test_a_key_pasted_into_api_key_env_is_not_echoed() -> None:
    config = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
    result = runner.invoke(app, ["solve", str(config), "--llm", "openai/x", "--api-key-env",
                                 "sk-123 456", "-q"])
    assert result.exit_code == 2
    assert "sk-123 456" not in result.output
    assert "--api-key-env" in result.output and "10 characters" in result.output
