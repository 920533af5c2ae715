"""The werewolf web API with the fake model: a whole bot-only game, pause/step/resume, restarts,
god view and replay (seat isolation and bad requests live in test_werewolf_web_security.py)."""

from __future__ import annotations

import pytest
from werewolf_web_helpers import LiveServer, read_events, stream_in_thread, wait_for

from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.web import is_loopback
from gtsteer.werewolf.web import server as web_server


def create(c, **body) -> str:
    r = c.post("/api/games", json={"step_delay_s": 0, "max_messages_per_day": 3, **body})
    assert r.status_code == 200, r.text
    return r.json()["id"]


def test_bot_only_game_over_the_api(tmp_path):
    db = tmp_path / "web.sqlite"
    with LiveServer(db) as srv, srv.client() as c:
        assert "Werewolf" in c.get("/").text
        gid = create(c, players=6, seed=3, step_delay_s=0.01)
        events: list = []
        read_events(c, f"/api/games/{gid}/events", events)
        kinds = [e["type"] for e, _ in events]
        assert kinds[0] == "snapshot" and kinds[-1] == "end"
        snap = events[0][0]
        streamed = [e for e, _ in events[1:] if e["type"] not in ("turn", "end")]
        feed = snap["feed"] + streamed
        # The snapshot plus the live events hold every public message exactly once, in order.
        final = GameStore(db).load(gid)
        public = [m.id for m in final.messages if m.channel == "public"]
        assert [e["id"] for e in feed if e["type"] == "message"] == public
        assert next(e for e in feed if e["type"] == "over")["winner"] == final.winner
        assert final.winner in ("village", "werewolves")
        votes = [e for e in feed if e["type"] == "vote"]
        assert len(votes) == len(final.votes) and all("reason" not in v for v in votes)

        state = c.get(f"/api/games/{gid}/state").json()
        assert state["game"]["over"] and state["game"]["winner"] == final.winner
        assert all(p["role"] for p in state["players"])  # roles revealed at the end

        row = next(g for g in c.get("/api/games").json() if g["id"] == gid)
        assert row["winner"] == final.winner and row["day"] == final.day
        assert row["llm_calls"] == len(GameStore(db).calls(gid)) > 0
        assert row["cost_usd"] == 0.0

        god = c.get(f"/api/games/{gid}/god").json()
        assert {p["name"]: p["role"] for p in god["players"]} == {
            p.name: p.role.value for p in final.players}
        assert all(p["playstyle"] and p["model"] == "fake" for p in god["players"])
        vote = next(d for d in god["decisions"] if d["kind"] == "vote")
        calls = c.get(f"/api/games/{gid}/calls", params={"step": vote["step"]}).json()
        stored = [r for r in GameStore(db).calls(gid) if r.extra["step"] == vote["step"]]
        assert [x["prompt"] for x in calls] == [r.prompt for r in stored]
        assert [x["response"] for x in calls] == [r.response for r in stored]
        assert "vote" in calls[0]["prompt"].lower()

        replay = c.get(f"/api/games/{gid}/replay").json()
        assert [s["step"] for s in replay["steps"]] == list(range(1, final.step + 1))
        assert all(p["alive"] for p in replay["players"])
        assert replay["steps"][-1]["events"][-1]["type"] == "over"
        assert "Replay" in c.get(f"/games/{gid}/replay").text


def test_pause_step_resume(tmp_path):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        gid = create(c, players=5, seed=1, step_delay_s=0.05)
        assert c.post(f"/api/games/{gid}/control", json={"action": "pause"}).json()["paused"]
        game = srv.manager.live(gid)
        wait_for(lambda: not game.thinking)
        with game.cond:  # the worker steps only when `_may_step()`, under this lock
            at = game.state.step
            assert not game._may_step()  # paused: nothing moves
        assert c.post(f"/api/games/{gid}/control", json={"action": "step"}).status_code == 200
        wait_for(lambda: game.state.step == at + 1 and not game.thinking)
        with game.cond:
            assert game.state.step == at + 1 and game.steps_allowed == 0
            assert not game._may_step()  # one step taken, then held again
        assert c.post(f"/api/games/{gid}/control", json={"action": "resume"}).status_code == 200
        wait_for(lambda: game.state.over, timeout=120)


def test_games_survive_a_restart(tmp_path):
    db = tmp_path / "web.sqlite"
    with LiveServer(db) as srv, srv.client() as c:
        bots = create(c, players=5, seed=2, step_delay_s=0.05)
        c.post(f"/api/games/{bots}/control", json={"action": "pause"})
        r = c.post("/api/games", json={"players": 5, "seed": 4, "human": "Robin",
                                       "step_delay_s": 0})
        human, token = r.json()["id"], r.json()["token"]
        wait_for(lambda: c.get(f"/api/games/{human}/state",
                               headers={"X-Seat-Token": token}).json()["turn"]["turn"]["yours"])
        said = "I am new here and I keep a close eye on everyone"
        r = c.post(f"/api/games/{human}/act", headers={"X-Seat-Token": token},
                   json={"kind": "speak", "text": said})
        assert r.status_code == 200, r.text

    paused_at = GameStore(db).load(bots).step  # a pause lets the step in flight finish
    # A new server on the same database picks both games up where they were.
    with LiveServer(db) as srv, srv.client() as c:
        game = srv.manager.live(bots)
        assert game.paused and game.state.step == paused_at
        c.post(f"/api/games/{bots}/control", json={"action": "resume"})
        wait_for(lambda: game.state.over, timeout=120)
        snap = c.get(f"/api/games/{human}/state", headers={"X-Seat-Token": token}).json()
        assert snap["me"]["name"] == "Robin"  # the token survived the restart
        mine = [e for e in snap["feed"] if e["type"] == "message" and e["author"] == "Robin"]
        assert mine and mine[0]["text"] == said  # history rebuilt from SQLite


def test_adopt_a_game_started_elsewhere(tmp_path):
    from gtsteer.werewolf.runner import create_game
    from gtsteer.werewolf.state import GameConfig

    db = tmp_path / "web.sqlite"
    state = create_game(GameStore(db), GameConfig(n_players=5, max_messages_per_day=3), seed=7,
                        game_id="cli1")
    with LiveServer(db) as srv, srv.client() as c:
        row = next(g for g in c.get("/api/games").json() if g["id"] == "cli1")
        assert not row["managed"]
        assert srv.manager.live("cli1").state.step == state.step  # not driven until adopted
        assert c.post("/api/games/cli1/adopt", json={}).status_code == 200
        assert c.post("/api/games/cli1/adopt", json={}).status_code == 409
        events: list = []
        read_events(c, "/api/games/cli1/events", events)
        assert events[-1][0]["type"] == "end"
        assert GameStore(db).load("cli1").over


def test_live_event_stream_for_a_seat_ends_with_the_game(tmp_path):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        r = c.post("/api/games", json={"players": 5, "seed": 5, "human": "Robin",
                                       "max_messages_per_day": 2})
        gid, token = r.json()["id"], r.json()["token"]
        headers = {"X-Seat-Token": token}
        thread, sink = stream_in_thread(srv.client(), f"/api/games/{gid}/events", headers)
        # Act only once the stream holds its snapshot: on a loaded machine the thread can connect
        # after Robin's first line, which then sits in the snapshot's feed, not in a live event.
        wait_for(lambda: sink)
        while not srv.manager.live(gid).state.over:
            turn = c.get(f"/api/games/{gid}/state", headers=headers).json()["turn"]["turn"]
            if turn and turn["yours"]:
                body = ({"kind": turn["kind"], "text": "hello"}
                        if turn["kind"] in ("speak", "pack_chat")
                        else {"kind": turn["kind"], "target": turn["legal_targets"][0]})
                assert c.post(f"/api/games/{gid}/act", headers=headers,
                              json=body).status_code == 200
        thread.join(30)
        types = [e["type"] for e, _ in sink]
        assert types[0] == "snapshot" and "over" in types and types[-1] == "end"
        assert any(e["type"] == "message" and e["author"] == "Robin" for e, _ in sink)


@pytest.mark.parametrize("host,loop", [("127.0.0.1", True), ("::1", True), ("localhost", True),
                                       ("0.0.0.0", False), ("192.168.1.5", False),
                                       ("example.org", False)])
def test_loopback_detection(host, loop):
    assert is_loopback(host) is loop


def test_non_loopback_bind_warns(tmp_path, monkeypatch):
    import uvicorn

    ran: list = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append(kw))
    warnings: list[str] = []
    web_server.serve("0.0.0.0", 8123, tmp_path / "a.sqlite", ["fake"], warn=warnings.append)
    assert ran[0]["host"] == "0.0.0.0" and "no user accounts" in warnings[0]
    web_server.serve("127.0.0.1", 8123, tmp_path / "a.sqlite", ["fake"], warn=warnings.append)
    assert len(warnings) == 1


def test_a_broken_stored_game_does_not_stop_the_server(tmp_path):
    import sqlite3

    db = tmp_path / "web.sqlite"
    with LiveServer(db) as srv, srv.client() as c:
        good = create(c, players=5, seed=1, step_delay_s=0.05)
        c.post(f"/api/games/{good}/control", json={"action": "pause"})
        bad = create(c, players=5, seed=2, step_delay_s=0.05)
        c.post(f"/api/games/{bad}/control", json={"action": "pause"})
    conn = sqlite3.connect(db)
    conn.execute("UPDATE games SET state=? WHERE id=?", ('{"game_id": "x", "nonsense": 1}', bad))
    conn.commit()
    conn.close()
    with LiveServer(db) as srv, srv.client() as c:  # starts, and resumes the good game
        assert srv.manager.live(good).paused
        assert [g["id"] for g in c.get("/api/games").json()] == [good]
        r = c.get(f"/api/games/{bad}/state")
        assert r.status_code == 409 and "cannot be read" in r.json()["error"]
