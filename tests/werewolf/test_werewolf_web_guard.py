"""Requests the werewolf web app refuses before any game work, and what spectators may not learn
(issue 27, items 2, 5, 7 and the chat limit of item 8)."""

from __future__ import annotations

import re
import socket
from itertools import pairwise
from pathlib import Path

import pytest
from werewolf_web_helpers import LiveServer, stream_in_thread, wait_for

from gtsteer.llm import LLM, FakeBackend
from gtsteer.werewolf.bots import MAX_LINE_CHARS
from gtsteer.werewolf.rules import Role, assign_roles
from gtsteer.werewolf.runner import create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.web.guard import MAX_BODY_BYTES, allowed_hosts, host_name

DOCS = Path(__file__).resolve().parents[2] / "docs" / "WEREWOLF.md"


class ModelLog:
    """An llm_factory that records every model the server builds a wrapper for."""

    def __init__(self) -> None:
        self.models: list[str] = []

    def __call__(self, model: str) -> LLM:
        self.models.append(model)
        return LLM(model, backend=FakeBackend(model))


def cli_game(db: Path, game_id: str, models: list[str] | None = None):
    return create_game(GameStore(db), GameConfig(n_players=5, max_messages_per_day=3), seed=7,
                       game_id=game_id, models=models)


# ---- item 2: adopt ----------------------------------------------------------------------------


def test_adopt_refuses_a_game_on_a_model_the_server_does_not_offer(tmp_path):
    db = tmp_path / "web.sqlite"
    other = "ollama_chat/llama3.1"
    state = cli_game(db, "oll1", models=[other] * 5)
    log = ModelLog()
    with LiveServer(db, models=["fake"], llm_factory=log) as srv, srv.client() as c:
        r = c.post("/api/games/oll1/adopt", json={})
        assert r.status_code == 422
        assert f"model '{other}' is not offered by this server" in r.json()["error"]
        assert not srv.manager.live("oll1").managed
        # Nor can the pause controls start it.
        r = c.post("/api/games/oll1/control", json={"action": "resume"})
        assert r.status_code == 422 and other in r.json()["error"]
    assert other not in log.models
    assert GameStore(db).load("oll1") == state  # not one step taken


def test_a_server_restart_does_not_resume_a_game_on_a_model_no_longer_offered(tmp_path):
    db = tmp_path / "web.sqlite"
    cli_game(db, "g1", models=["fake:other"] * 5)
    with LiveServer(db, models=["fake", "fake:other"]) as srv, srv.client() as c:
        assert c.post("/api/games/g1/control", json={"action": "pause"}).status_code == 200
        assert c.post("/api/games/g1/adopt", json={}).status_code == 200
        wait_for(lambda: not srv.manager.live("g1").thinking)
    at = GameStore(db).load("g1").step
    log = ModelLog()
    with LiveServer(db, models=["fake"], llm_factory=log) as srv, srv.client() as c:
        state = c.get("/api/games/g1/state").json()
        assert "'fake:other' is not offered" in state["game"]["halted"]
    assert "fake:other" not in log.models and GameStore(db).load("g1").step == at


@pytest.mark.parametrize("headers,why", [
    ({"Origin": "http://evil.example", "Content-Type": "text/plain"}, "cross-origin"),
    ({"Origin": "http://evil.example", "Content-Type": "application/json"}, "cross-origin"),
    ({"Origin": "null"}, "cross-origin"),
    ({"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, "cross-site"),
    ({"Content-Type": "text/plain"}, "Content-Type: application/json"),
    ({}, "Content-Type: application/json"),
])
def test_adopt_needs_same_origin_proof(tmp_path, headers, why):
    db = tmp_path / "web.sqlite"
    state = cli_game(db, "cli1")
    with LiveServer(db) as srv, srv.client() as c:
        r = c.post("/api/games/cli1/adopt", headers=headers,
                   content=b"{}" if "Content-Type" in headers else None)
        assert r.status_code == 403, r.text
        assert why in r.json()["error"]
        assert not srv.manager.live("cli1").managed
        assert c.get("/api/games").json()[0]["managed"] is False
    assert GameStore(db).load("cli1") == state


@pytest.mark.parametrize("how", ["json", "own-origin"])
def test_adopt_from_the_app_itself_works(tmp_path, how):
    db = tmp_path / "web.sqlite"
    cli_game(db, "cli1")
    with LiveServer(db) as srv, srv.client() as c:
        if how == "json":
            r = c.post("/api/games/cli1/adopt", json={})
        else:  # what the page's fetch sends: its own origin, same-origin fetch metadata
            r = c.post("/api/games/cli1/adopt", headers={"Origin": srv.url,
                                                          "Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 200, r.text
        wait_for(lambda: srv.manager.live("cli1").state.over, timeout=120)


def test_every_state_changing_endpoint_refuses_a_foreign_origin(tmp_path):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        evil = {"Origin": "http://localhost.evil.example"}
        r = c.post("/api/games", json={"players": 5}, headers=evil)
        assert r.status_code == 403 and c.get("/api/games").json() == []
        gid = c.post("/api/games", json={"players": 5, "step_delay_s": 0.05}).json()["id"]
        r = c.post(f"/api/games/{gid}/control", json={"action": "pause"}, headers=evil)
        assert r.status_code == 403 and not srv.manager.live(gid).paused
        r = c.post(f"/api/games/{gid}/join", json={"name": "Robin"}, headers=evil)
        assert r.status_code == 403


# ---- item 5: Host allow-list and body cap -----------------------------------------------------


@pytest.mark.parametrize("host,ok", [("127.0.0.1:{port}", True), ("localhost:{port}", True),
                                     ("LOCALHOST", True), ("[::1]:{port}", True),
                                     ("attacker.example:{port}", False),
                                     ("127.0.0.1.attacker.example", False), ("", False)])
def test_only_the_servers_own_host_names_are_answered(tmp_path, host, ok):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        port = srv.url.rsplit(":", 1)[1]
        for path in ("/api/games", "/", "/api/config"):
            r = c.get(path, headers={"Host": host.format(port=port)})
            assert (r.status_code == 200) is ok, (path, r.status_code)
            if not ok:
                assert r.status_code == 421 and "does not answer for host" in r.json()["error"]
        r = c.post("/api/games", json={"players": 5}, headers={"Host": host.format(port=port)})
        assert (r.status_code == 200) is ok
        assert len(c.get("/api/games").json()) == int(ok)


def test_allowed_host_names_follow_the_bind_address():
    assert allowed_hosts("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert allowed_hosts("192.168.1.5") == {"192.168.1.5"}
    assert allowed_hosts("192.168.1.5", ["ww.example.org."]) == {"192.168.1.5", "ww.example.org"}
    wild = allowed_hosts("0.0.0.0")
    assert {"127.0.0.1", "localhost", socket.gethostname().lower()} <= wild
    assert "*" in allowed_hosts("0.0.0.0", ["*"])
    assert [host_name(h) for h in ("[::1]:80", "Example.ORG.:8000", "a:b:c")] == [
        "::1", "example.org", "a:b:c"]


def raw_request(url: str, head: str, chunks: list[bytes] = ()) -> str:
    """Send a request head (and body chunks) over a socket; return the response's first
    line without sending the rest of the body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(head.encode())
        for chunk in chunks:
            s.sendall(chunk)
        return s.recv(65536).decode("latin-1").split("\r\n", 1)[0]


def test_an_oversized_body_is_refused_from_its_length_without_reading_it(tmp_path):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        head = (f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                f"application/json\r\nContent-Length: {100 * 2**20}\r\n\r\n")
        # Only the head and one byte are sent: an answer proves the 100 MB were never awaited.
        assert raw_request(srv.url, head, [b"{"]) == "HTTP/1.1 413 Request Entity Too Large"
        assert c.get("/api/games").json() == []


def test_a_chunked_body_is_refused_once_it_passes_the_cap(tmp_path):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        head = ("POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                "application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b'{"theme": "' + b"a" * (MAX_BODY_BYTES // 4)
        chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        # Five chunks pass the cap; the body is never finished, yet the answer comes.
        assert raw_request(srv.url, head, [chunk] * 5) == "HTTP/1.1 413 Request Entity Too Large"
        assert c.get("/api/games").json() == []
        r = c.post("/api/games", json={"players": 5, "theme": "a" * 70})
        assert r.status_code == 200  # a normal body still passes


# ---- item 7: what spectators learn at night ---------------------------------------------------


def doctor_seed(n: int = 5, nth: int = 0) -> int:
    """The `nth` seed that deals the human seat (seat 0) the doctor, who acts every night it is
    alive."""
    return [s for s in range(200) if assign_roles(n, 1, (), s)[0] is Role.DOCTOR][nth]


#: Which doctor seed: the fake bots' votes follow their prompts' hashes, so a prompt change can
#: vote the human out on day 1, before any night (the first doctor seed, 1, does since the bots'
#: prompts open with the game frame; the second, 3, reaches two nights).
NIGHT_REACHING_DOCTOR = 1


def test_spectators_cannot_time_the_humans_night_slot_or_count_night_steps(tmp_path):
    db = tmp_path / "web.sqlite"
    with LiveServer(db) as srv, srv.client() as c:
        r = c.post("/api/games", json={"players": 5, "seed": doctor_seed(nth=NIGHT_REACHING_DOCTOR),
                                       "human": "Robin",
                                       "max_messages_per_day": 2, "step_delay_s": 0})
        gid, token = r.json()["id"], r.json()["token"]
        assert srv.manager.live(gid).state.player("Robin").role is Role.DOCTOR
        thread, public = stream_in_thread(srv.client(), f"/api/games/{gid}/events")
        wait_for(lambda: public)
        headers = {"X-Seat-Token": token}
        spectator = srv.client()  # no seat cookie
        lobby_rows, polled, nights = [], [], 0
        while not srv.manager.live(gid).state.over:
            lobby_rows.append(next(g for g in spectator.get("/api/games").json()
                                   if g["id"] == gid))
            polled.append(spectator.get(f"/api/games/{gid}/state").json()["turn"])
            turn = c.get(f"/api/games/{gid}/state", headers=headers).json()["turn"]["turn"]
            if turn and turn["yours"]:
                nights += turn["kind"] == "night"
                body = ({"kind": turn["kind"], "text": "hello"}
                        if turn["kind"] in ("speak", "pack_chat")
                        else {"kind": turn["kind"], "target": turn["legal_targets"][0]})
                assert c.post(f"/api/games/{gid}/act", headers=headers,
                              json=body).status_code == 200
        thread.join(60)
        spectator.close()
        final = GameStore(db).load(gid)
    assert nights >= 1 and final.night_actions  # the human did act at night
    turns = [e for e, _ in public if e["type"] == "turn"]
    hidden = [t for t in turns + polled if t["turn"] and t["turn"]["kind"] == "night"]
    assert hidden and all(t["turn"]["actor"] is None and t["thinking"] for t in hidden)
    # No turn event repeats the one before it: a stream of identical "night" events would
    # count the night's steps.
    assert all(a != b for a, b in pairwise(turns))
    # One "night" turn per night, however many hidden steps the night took.
    nights_played = len({a.night for a in final.night_actions})
    steps_per_night = len(final.night_actions) / nights_played
    night_turns = [t for t in turns if t["turn"] and t["turn"]["kind"] == "night"]
    assert len(night_turns) == nights_played < len(final.night_actions)
    assert steps_per_night > 1
    # The lobby shows no call or token counts for the running human game, then the totals.
    running = [row for row in lobby_rows if not row["over"]]
    assert running and all(row["llm_calls"] is None and row["tokens"] is None
                           and row["cost_usd"] is None for row in running)
    with LiveServer(db) as srv, srv.client() as c:
        row = next(g for g in c.get("/api/games").json() if g["id"] == gid)
    assert row["llm_calls"] == len(GameStore(db).calls(gid)) > 0


# ---- item 8: the documented chat limit --------------------------------------------------------


def test_the_documented_chat_line_limit_is_the_enforced_one(tmp_path):
    documented = re.findall(r"printable line of at most (\d+) characters", DOCS.read_text())
    assert documented == [str(MAX_LINE_CHARS)]
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        r = c.post("/api/games", json={"players": 5, "seed": 4, "human": "Robin",
                                       "step_delay_s": 0})
        gid, token = r.json()["id"], r.json()["token"]
        headers = {"X-Seat-Token": token}
        wait_for(lambda: c.get(f"/api/games/{gid}/state",
                               headers=headers).json()["turn"]["turn"]["yours"])
        r = c.post(f"/api/games/{gid}/act", headers=headers,
                   json={"kind": "speak", "text": "a" * (MAX_LINE_CHARS + 1)})
        assert r.status_code == 422 and "at most" in r.json()["error"]
        r = c.post(f"/api/games/{gid}/act", headers=headers,
                   json={"kind": "speak", "text": "a" * MAX_LINE_CHARS})
        assert r.status_code == 200



def test_serve_answers_the_names_given_with_allow_host(tmp_path, monkeypatch):
    import uvicorn
    from starlette.testclient import TestClient
    from typer.testing import CliRunner

    from gtsteer.cli import app as cli

    apps: list = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    res = CliRunner().invoke(cli, ["werewolf", "serve", "--llm", "fake", "--db",
                                   str(tmp_path / "w.sqlite"), "--allow-host", "ww.example.org"])
    assert res.exit_code == 0, res.output
    client = TestClient(apps[0])  # no lifespan: the games are not started
    assert client.get("/api/config", headers={"Host": "ww.example.org:8000"}).status_code == 200
    assert client.get("/api/config", headers={"Host": "localhost:8000"}).status_code == 200
    assert client.get("/api/config", headers={"Host": "other.example.org"}).status_code == 421
