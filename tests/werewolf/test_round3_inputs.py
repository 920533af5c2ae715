"""Small input and storage limits from the third reliability round (review A1, B6, G1, G2,
F1, E2): each was a crash, a hang, or a value that should never have been accepted."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.binding.spec import MAX_CONFIG_BYTES, ConfigError, read_spec
from gtsteer.cli import app
from gtsteer.testing import LoopbackServer
from gtsteer.werewolf.bots import MAX_LINE_CHARS
from gtsteer.werewolf.runner import create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.web.guard import RequestGuard, SecurityHeaders

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
SMALL = ["--players", "5", "--max-days", "1", "--max-messages", "2"]


# ---- B6: a served game stores its endpoint (never the key) --------------------------------


def test_a_served_game_stores_its_endpoint_without_credentials(tmp_path: Path) -> None:
    store = GameStore(tmp_path / "ww.sqlite")
    state = create_game(store, GameConfig(n_players=5), model="fake", game_id="g1",
                        api_base="https://u:pw@gpu1.example:8080/v1?key=QSECRET")
    assert state.api_base == "https://gpu1.example:8080/v1"
    assert store.load("g1").api_base == "https://gpu1.example:8080/v1"
    blob = (tmp_path / "ww.sqlite").read_bytes()
    assert b"QSECRET" not in blob and b"pw@" not in blob


def test_resume_talks_to_the_games_own_server(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = str(tmp_path / "ww.sqlite")
    with LoopbackServer() as srv:
        store = GameStore(db)
        create_game(store, GameConfig(n_players=5), model="openai/stub", game_id="s2",
                    api_base=srv.base_url)
        store.close()
        srv.fail_next(1000, 400)  # a request that reaches it fails at once: enough to see it
        result = runner.invoke(app, ["werewolf", "resume", "s2", "--db", db])
    assert f"Served models at {srv.base_url} (stored with the game)" in result.output
    assert srv.requests > 0, result.output  # not litellm's default (OpenAI's) endpoint


# ---- G1: a read-only database can still be listed, shown and exported ---------------------


def _can_mount_read_only() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs user namespaces (unshare -rm)")
def test_a_read_only_database_is_listed_shown_and_exported(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "u.sqlite"
    played = runner.invoke(app, ["werewolf", "play", "--llm", "fake", *SMALL, "--seed", "3",
                                 "--db", str(db), "--game-id", "u1"])
    assert played.exit_code == 0, played.output
    commands = [f"{sys.executable} -m gtsteer werewolf {cmd} --db {db}"
                for cmd in ("list", "show u1", "export u1")]
    script = f"mount --bind -o ro {folder} {folder} && " + " && ".join(commands)
    # As a game in progress leaves it (or a killed run): the WAL and its index beside the file.
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE games SET status=status")
    writer.commit()
    assert (folder / "u.sqlite-wal").exists() and (folder / "u.sqlite-shm").exists()
    try:
        done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                              text=True, check=False, timeout=300,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                   "GTSTEER_CACHE_DIR": str(tmp_path / "cache")})
    finally:
        writer.close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "u1" in done.stdout and "Winner" in done.stdout and '"game_id": "u1"' in done.stdout


# ---- G2: a human's terminal line follows the web's rule ----------------------------------


def test_a_humans_long_or_control_line_is_refused_and_asked_again(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    typed = ["x" * 200_000, "\x1b[31mred\x1b[0m \r\x07 bell", "hello   there\tfriends"]
    typed += ["1"] * 60
    result = runner.invoke(app, ["werewolf", "play", "--with-human", "--human", "Robin",
                                 "--llm", "fake", *SMALL, "--seed", "3", "--db", str(db),
                                 "--game-id", "L1"], input="\n".join(typed) + "\n")
    assert result.exit_code == 0, result.output[-2000:]
    assert f"not sent: at most {MAX_LINE_CHARS} characters, got 200000" in result.output
    assert "not sent: the line has control or unprintable characters" in result.output
    with sqlite3.connect(db) as conn:
        lines = [r[0] for r in conn.execute("SELECT text FROM messages WHERE author='Robin'")]
    assert lines and lines[0] == "hello there friends"
    assert all(len(t) <= MAX_LINE_CHARS and t.isprintable() for t in lines)


# ---- F1: a client that stops or drops mid-body --------------------------------------------


async def _ok_app(scope: dict, receive: object, send: object) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": b"{}"})  # type: ignore[operator]


def _post(*messages: dict) -> dict:
    return {"type": "http", "method": "POST", "path": "/api/games",
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                        (b"content-length", b"100")]}


def test_a_client_dropping_mid_body_gets_no_response_and_raises_nothing() -> None:
    sent: list[dict] = []
    incoming = iter([{"type": "http.request", "body": b"12345", "more_body": True},
                     {"type": "http.disconnect"}])

    async def receive() -> dict:
        return next(incoming)

    async def send(message: dict) -> None:
        sent.append(message)

    guarded = SecurityHeaders(RequestGuard(_ok_app, hosts={"127.0.0.1"}), {"X-Test": "1"})
    asyncio.run(guarded(_post(), receive, send))
    assert sent == []


def test_a_body_that_stops_arriving_is_answered_408() -> None:
    sent: list[dict] = []

    async def receive() -> dict:
        await asyncio.sleep(3600)
        return {}

    async def send(message: dict) -> None:
        sent.append(message)

    guard = RequestGuard(_ok_app, hosts={"127.0.0.1"}, body_timeout_s=0.2)
    start = time.monotonic()
    asyncio.run(SecurityHeaders(guard, {"X-Test": "1"})(_post(), receive, send))
    assert time.monotonic() - start < 2
    assert sent[0]["status"] == 408 and (b"x-test", b"1") in sent[0]["headers"]


def test_the_app_answers_a_dropped_body_without_an_error_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gtsteer.werewolf.web.app import create_app
    from gtsteer.werewolf.web.manager import GameManager

    app = create_app(GameManager(tmp_path / "w.sqlite", ["fake"]), hosts={"127.0.0.1"})
    incoming = iter([{"type": "http.request", "body": b"12345", "more_body": True},
                     {"type": "http.disconnect"}])

    async def receive() -> dict:
        return next(incoming)

    async def send(message: dict) -> None:
        raise AssertionError(f"nobody to answer: {message}")

    scope = {**_post(), "scheme": "http", "server": ("127.0.0.1", 8000), "query_string": b"",
             "root_path": "", "http_version": "1.1", "client": ("127.0.0.1", 5000),
             "raw_path": b"/api/games", "asgi": {"version": "3.0"}}
    asyncio.run(app(scope, receive, send))  # raised RuntimeError("No response returned.")


# ---- E2: an oversized config is refused before it is parsed --------------------------------


def test_an_oversized_config_is_refused_at_once(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("k: " + "x" * (50 * 1024 * 1024) + "\n")
    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"over the {MAX_CONFIG_BYTES} a config may have"):
        read_spec(big)
    assert time.monotonic() - start < 1.0


# ---- reliability-0832c41 L9: the cap holds for files with no size (devices, pipes, FIFOs) ----


def _read_spec_within(path: str | Path, seconds: float) -> BaseException | None:
    """What `read_spec(path)` raised, run in a thread that must end within `seconds`."""
    raised: list[BaseException | None] = [None]

    def read() -> None:
        try:
            read_spec(path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised[0] = exc

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(seconds)
    assert not reader.is_alive(), f"read_spec({path}) still reading after {seconds} s"
    return raised[0]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_device_is_read_only_up_to_the_cap() -> None:
    err = _read_spec_within("/dev/zero", 10)
    assert isinstance(err, ConfigError), err
    assert f"more than {MAX_CONFIG_BYTES} bytes, over the {MAX_CONFIG_BYTES}" in str(err)


def test_an_endless_pipe_is_read_only_up_to_the_cap() -> None:
    """`yes 'name: a' | gtsteer solve /dev/stdin`: a pipe has no size to check first."""
    read_end, write_end = os.pipe()

    def write_forever() -> None:
        with open(write_end, "wb", buffering=0) as out:
            try:
                while True:
                    out.write(b"name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" * 64)
            except (BrokenPipeError, OSError):
                return

    threading.Thread(target=write_forever, daemon=True).start()
    try:
        err = _read_spec_within(f"/dev/fd/{read_end}", 20)
    finally:
        os.close(read_end)
    assert isinstance(err, ConfigError) and "over the" in str(err), err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    start = time.monotonic()
    err = _read_spec_within(fifo, 10)
    assert isinstance(err, ConfigError), err
    assert str(err) == (f"{fifo}: a named pipe with nothing to read (no program is writing to"
                        " it); give the config file itself")
    assert time.monotonic() - start < 2.0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_with_a_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    config = (ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml").read_bytes()
    writing = threading.Event()

    def write() -> None:
        writing.set()
        with open(fifo, "wb") as out:  # blocks until a reader opens the FIFO
            out.write(config)

    threading.Thread(target=write, daemon=True).start()
    writing.wait(5)
    time.sleep(0.5)  # the writer is waiting in open() by now
    err = _read_spec_within(fifo, 10)
    assert err is None, err
