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

from gtsteer.cli import app
from gtsteer.llm import LLM, LLMCallError
from gtsteer.llm.backends.litellm_backend import scrub_secrets
from gtsteer.testing import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
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


# ---- review reliability-0832c41 L5, L6 ------------------------------------------------------


def _stored_endpoint_game(db: str, srv: LoopbackServer) -> None:
    from gtsteer.werewolf.runner import create_game
    from gtsteer.werewolf.state import GameConfig
    from gtsteer.werewolf.store import GameStore

    store = GameStore(db)
    create_game(store, GameConfig(n_players=5), model="openai/stub", game_id="s1",
                api_base=srv.base_url)
    store.close()


def test_a_stored_endpoint_gets_no_key_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A game database may come from anywhere: resuming it must not send the user's
    OPENAI_API_KEY to the URL it stores, only the key `--api-key-env` names (L5)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-realOpenAIkey-ABCDEFGH12345678")
    db = str(tmp_path / "ww.sqlite")
    with LoopbackServer() as srv:
        _stored_endpoint_game(db, srv)
        srv.fail_next(1000, 400)  # the first request shows the header; the game stops there
        keyless = runner.invoke(app, ["werewolf", "resume", "s1", "--db", db])
        sent_keyless = set(srv.authorizations)
        srv.reset_counters()
        named = runner.invoke(app, ["werewolf", "resume", "s1", "--db", db,
                                    "--api-key-env", "SERVERPASS"])
        sent_named = set(srv.authorizations)
    assert sent_keyless == {"Bearer no-key"}, keyless.output
    assert "no key (--api-key-env sends one)" in " ".join(keyless.output.split())
    assert sent_named == {f"Bearer {KEY}"}, named.output
    assert "realOpenAIkey" not in keyless.output + named.output


def test_a_flag_the_user_gives_still_lets_the_environment_key_go_to_that_url(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--api-base` typed by the user is the user's choice: litellm's usual key applies."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own-choice")
    db = str(tmp_path / "ww.sqlite")
    with LoopbackServer() as srv:
        _stored_endpoint_game(db, srv)
        srv.fail_next(1000, 400)
        runner.invoke(app, ["werewolf", "resume", "s1", "--db", db, "--api-base", srv.base_url])
    assert set(srv.authorizations) == {"Bearer sk-users-own-choice"}


#: Keys that are valid variable names too, so only their shape gives them away (L6).
NAME_SHAPED_KEYS = ["hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
                    "gsk_8fJ2kLm9QwErTy7UiOp3AsDfGhJkL1zXcVbNm0",
                    "AbCdEfGhIjKlMnOpQrStUvWxYz012345"]


@pytest.mark.parametrize("key", NAME_SHAPED_KEYS)
def test_a_name_shaped_key_in_api_key_env_is_not_echoed(key: str) -> None:
    result = runner.invoke(app, ["llm", "ask", "--model", "openai/x", "--api-key-env", key, "hi"])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "--api-key-env" in out and "that environment variable is not set" in out
    assert key not in out and key[4:12] not in out
    assert f"{key[:2]}... ({len(key)} characters" in out


@pytest.mark.parametrize("key", NAME_SHAPED_KEYS)
def test_a_name_shaped_key_in_a_configs_api_key_env_is_not_echoed(
        key: str, tmp_path: Path) -> None:
    config = tmp_path / "served.yaml"
    source = (ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml").read_text()
    config.write_text(source + "\nmodels:\n  writer: {model: openai/x, api_base:"
                      f" 'http://127.0.0.1:9/v1', api_key_env: {key}}}\n")
    result = runner.invoke(app, ["solve", str(config), "-q", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "models.writer.api_key_env" in out and "that environment variable is not set" in out
    assert key not in out and key[4:12] not in out


def test_a_variable_name_is_still_named_in_full() -> None:
    result = runner.invoke(app, ["llm", "ask", "--model", "openai/x", "--api-key-env",
                                 "HUGGINGFACEHUB_API_TOKEN_UNSET", "hi"])
    assert result.exit_code == 2
    assert ("--api-key-env HUGGINGFACEHUB_API_TOKEN_UNSET: that environment variable is not set"
            in " ".join(result.output.split()))
