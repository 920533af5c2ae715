"""Smaller guards from the fourth reliability round (review 0832c41, L7, L8, L11): concurrent
web adopts, the web body deadline, and the benchmarks that built llama.cpp before checking
their arguments."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from werewolf_web_helpers import LiveServer

from gtsteer.werewolf.runner import create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.web.guard import RequestGuard
from gtsteer.werewolf.web.server import MAX_HEAD_BYTES
from lab.bench import bench_abba, bench_profile, llama_tools

# ---- L7: concurrent adopts --------------------------------------------------------------------


def test_of_concurrent_adopts_of_one_game_exactly_one_succeeds(tmp_path: Path) -> None:
    db = tmp_path / "web.sqlite"
    create_game(GameStore(db), GameConfig(n_players=5, max_messages_per_day=3), seed=7,
                game_id="cli3")
    adopts = 8
    with LiveServer(db) as srv:
        manager = srv.manager
        checked = manager.check_game_models

        def slow_check(state: Any) -> None:
            time.sleep(0.2)  # a busy server: every request is between its check and its set
            checked(state)

        manager.check_game_models = slow_check  # type: ignore[method-assign]
        start = threading.Barrier(adopts)
        codes: list[int] = []

        def adopt() -> None:
            with srv.client() as c:
                start.wait()
                codes.append(c.post("/api/games/cli3/adopt", json={}).status_code)

        threads = [threading.Thread(target=adopt) for _ in range(adopts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(codes) == [200] + [409] * (adopts - 1)
        assert manager.live("cli3").managed


# ---- L8: one deadline for the whole body --------------------------------------------------------


async def _ok_app(scope: dict, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


POST = {"type": "http", "method": "POST", "path": "/api/games",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]}


def test_a_trickled_body_is_answered_408_once_the_request_deadline_passes() -> None:
    """One byte every 50 ms never pauses as long as the deadline, yet the whole body has
    that long: the answer is 408 soon after it, not after the 64 KiB cap (about an hour)."""
    sent: list[dict] = []

    async def trickle() -> dict:
        await asyncio.sleep(0.05)
        return {"type": "http.request", "body": b" ", "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    guard = RequestGuard(_ok_app, hosts={"127.0.0.1"}, body_timeout_s=0.5)

    async def guarded() -> None:
        await asyncio.wait_for(guard(POST, trickle, send), 10)  # a per-chunk timeout: hours

    start = time.monotonic()
    asyncio.run(guarded())
    assert sent[0]["status"] == 408
    assert 0.5 <= time.monotonic() - start < 2
    assert b"did not arrive within 0.5 s" in sent[1]["body"]


def test_a_body_that_arrives_in_time_passes_the_guard_whole() -> None:
    chunks = iter([{"type": "http.request", "body": b'{"a":', "more_body": True},
                   {"type": "http.request", "body": b" 1}", "more_body": False}])
    seen: list[bytes] = []

    async def receive() -> dict:
        await asyncio.sleep(0.01)
        return next(chunks)

    async def app(scope: dict, receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])
        await _ok_app(scope, receive, send)

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(RequestGuard(app, hosts={"127.0.0.1"}, body_timeout_s=1)(POST, receive, send))
    assert seen == [b'{"a": 1}'] and sent[0]["status"] == 200


def test_a_request_head_over_its_cap_is_answered_400_before_it_ends(tmp_path: Path) -> None:
    """Heads have no deadline (uvicorn has none); what bounds a never-finished one is its size."""
    with LiveServer(tmp_path / "web.sqlite") as srv:
        host, port = srv.url.removeprefix("http://").split(":")
        head = ("GET /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
                + "a" * (MAX_HEAD_BYTES + 100))  # never ended by a blank line
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(head.encode())
            assert s.recv(65536).split(b"\r\n", 1)[0] == b"HTTP/1.1 400 Bad Request"


# ---- L11: bench profile and bench abba check their arguments before any build -------------------


@pytest.fixture
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every process a benchmark would start (git, pip, cmake, llama-bench) is recorded and
    refused, as is llama.cpp's build."""
    started: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        started.append(args[0] if args else kwargs)
        raise AssertionError(f"started {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(llama_tools, "build", refuse)
    return started


@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "typo-model"], "--model: Unknown embedded model 'typo-model'"),
    (["--model", "/nowhere/model.gguf"], "--model: Local model file not found: /nowhere/"),
    (["--threads", "0"], "--threads: at least 1, got 0"),
    (["--threads", "-5"], "--threads: at least 1, got -5"),
])
def test_bench_profile_refuses_a_bad_model_or_threads_before_any_build(
        no_subprocess: list[Any], capsys: pytest.CaptureFixture[str], argv: list[str],
        message: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_profile.main([*argv, "--no-write"])
    assert exit_.value.code == 2
    assert f"python -m lab profile: error: {message}" in capsys.readouterr().err
    assert no_subprocess == []


@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "typo-model"], "--model: Unknown embedded model 'typo-model'"),
    (["--llm", "local:typo-model"], "--llm: Unknown embedded model 'typo-model'"),
])
def test_bench_abba_refuses_a_bad_model_before_any_build(
        no_subprocess: list[Any], capsys: pytest.CaptureFixture[str], argv: list[str],
        message: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_abba.main(["--against", "HEAD", *argv, "--no-write"])
    assert exit_.value.code == 2
    assert f"python -m lab abba: error: {message}" in capsys.readouterr().err
    assert no_subprocess == []
