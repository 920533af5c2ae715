"""Seat isolation and bad input for the werewolf web API.

Isolation: games with a human seat run on a canary model that writes a unique nonce into every
free text it produces (chat, reasons, notes, router reasons), and every character's story holds
a nonce. A human plays the seat over HTTP while its event stream and a public spectator's are
recorded; every byte a seat or the public receives is then checked against the finished game:
a nonce may appear only if it is in a chat line that viewer may read, no story but the seat's
own, no role of a living player it cannot know, no night action it did not observe, no pack chat
for a non-wolf, no reasons, notes, playstyles, models or prompts at all.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from werewolf_web_helpers import NONCE_RE, LiveServer, canary_llm, stream_in_thread, wait_for

from gtsteer.werewolf.bots import MAX_LINE_CHARS
from gtsteer.werewolf.playstyles import PLAYSTYLE_NAMES
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameState
from gtsteer.werewolf.store import GameStore

STORY_RE = re.compile(r"zs\d{2}x")
NAMES = ["Robin", "Bram", "Clara", "Dmitri", "Elin", "Finn", "Greta", "Hugo", "Ines", "Jonas",
         "Kaja", "Lukas"]
GOD_ONLY_KEYS = {"playstyle", "model", "reason", "notes", "prompt", "response", "fallback",
                 "error", "secret", "audience", "speakers"}


def cast(n: int) -> list[dict]:
    return [{"name": NAMES[i], "story": f"Character {i} with secret zs{i:02d}x.",
             "playstyle": PLAYSTYLE_NAMES[i % len(PLAYSTYLE_NAMES)]} for i in range(n)]


def play(c, gid: str, token: str, received: list[str]) -> None:
    """A scripted human: speaks with a marker, picks the last legal target; records responses."""
    headers = {"X-Seat-Token": token}
    n = 0
    while True:
        r = c.get(f"/api/games/{gid}/state", headers=headers)
        received.append(r.text)
        snap = r.json()
        if snap["game"]["over"]:
            return
        turn = snap["turn"]["turn"]
        if not (turn and turn["yours"]):
            time.sleep(0.01)
            continue
        n += 1
        if turn["kind"] in ("speak", "pack_chat"):
            body = {"kind": turn["kind"], "text": f"human line {n}"}
        else:
            body = {"kind": turn["kind"], "target": turn["legal_targets"][-1]}
        r = c.post(f"/api/games/{gid}/act", headers=headers, json=body)
        received.append(r.text)
        assert r.status_code == 200, r.text


def walk(obj, path=()):
    """Every (path, dict) in a JSON value."""
    if isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from walk(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, (*path, i))


def leaks(texts: list[str], final: GameState, seat: str | None) -> list[str]:
    """Everything in `texts` (responses and event lines) this viewer must not have received."""
    me = final.player(seat) if seat else None
    wolf = me is not None and me.role is Role.WEREWOLF
    readable = " ".join(m.text for m in final.messages
                        if m.channel == "public" or (wolf and m.channel == "pack"))
    allowed = set(NONCE_RE.findall(readable))
    problems: list[str] = []
    for text in texts:
        for n in set(NONCE_RE.findall(text)) - allowed:
            problems.append(f"{seat}: nonce {n} from a source it may not see")
        for s in STORY_RE.findall(text):
            problems.append(f"{seat}: another character's story ({s})")
        for path, node in walk(json.loads(text.removeprefix("data: "))):
            bad = GOD_ONLY_KEYS & set(node)
            if bad:
                problems.append(f"{seat}: god-only field {sorted(bad)} at {path}")
            if node.get("type") == "night_action":
                action = next(a for a in final.night_actions if a.night == node["night"]
                              and a.actor == node["actor"] and a.verb == node["verb"])
                if seat not in action.observers:
                    problems.append(f"{seat}: unobserved night action {node['text']!r}")
            if node.get("type") == "notice" and node["player"] != seat:
                problems.append(f"{seat}: someone else's abduction notice")
            if node.get("type") in ("decision", "notes"):
                problems.append(f"{seat}: god event {node['type']}")
            if node.get("type") == "message" and node.get("channel") == "pack" and not wolf:
                problems.append(f"{seat}: pack chat")
            if node.get("type") == "turn" and node["turn"] and node["phase"] == "night":
                t = node["turn"]
                sees_pack = wolf and (t["kind"] == "pack_chat" or t["verb"] == "kill")
                if t["actor"] and t["actor"] != seat and not sees_pack:
                    problems.append(f"{seat}: learns who acts at night ({t['actor']})")
        problems += role_leaks(text, final, seat)
    return problems


def role_leaks(text: str, final: GameState, seat: str | None) -> list[str]:
    """A snapshot may show a role only for the dead, the seat itself and (for a wolf) the pack."""
    body = json.loads(text.removeprefix("data: "))
    if not isinstance(body, dict) or "players" not in body or body.get("game", {}).get("over"):
        return []
    me = final.player(seat) if seat else None
    out = []
    for p in body["players"]:
        if p["role"] is None or not p["alive"] or p["name"] == seat:
            continue
        mates = me is not None and me.role is Role.WEREWOLF and p["role"] == "werewolf"
        if not mates:
            out.append(f"{seat}: sees the living {p['name']}'s role {p['role']}")
        if p["role"] != final.player(p["name"]).role.value:
            out.append(f"{seat}: a wrong role for {p['name']}")
    return out


def find_seed(srv, c, role: Role, n: int) -> tuple[str, str]:
    """Create games until the human seat (seat 0) gets `role`; return (game id, token)."""
    for seed in range(200):
        r = c.post("/api/games", json={"players": n, "seed": seed, "human": "Robin",
                                       "cast": cast(n), "max_messages_per_day": 3,
                                       "step_delay_s": 0})
        assert r.status_code == 200, r.text
        gid, token = r.json()["id"], r.json()["token"]
        if srv.manager.live(gid).state.player("Robin").role is role:
            return gid, token
    raise AssertionError(f"no seed gives the human the {role.value} role")


# Two wolves or more: day 1 cannot end the game, so every game has a night to audit.
@pytest.mark.parametrize("role,n", [(Role.WEREWOLF, 7), (Role.DETECTIVE, 8), (Role.VILLAGER, 7),
                                    (Role.DOCTOR, 7), (Role.MANIAC, 9)])
def test_a_seat_receives_only_what_its_role_may_know(tmp_path, role, n):
    db = tmp_path / "web.sqlite"
    with LiveServer(db, llm_factory=canary_llm) as srv, srv.client() as c:
        gid, token = find_seed(srv, c, role, n)
        seat_thread, seat_events = stream_in_thread(srv.client(), f"/api/games/{gid}/events",
                                                    {"X-Seat-Token": token})
        pub_thread, pub_events = stream_in_thread(srv.client(), f"/api/games/{gid}/events")
        wait_for(lambda: seat_events and pub_events)  # both streams hold their snapshots
        # While the human plays, everything god-like is refused, and nothing changes the game.
        for path in (f"/api/games/{gid}/god", f"/api/games/{gid}/calls?step=1",
                     f"/api/games/{gid}/state?view=god", f"/games/{gid}/god"):
            r = c.get(path, headers={"X-Seat-Token": token})
            assert r.status_code == 403 and "human seat" in r.json()["error"]
        assert c.get(f"/api/games/{gid}/replay").status_code == 409
        received: list[str] = []
        play(c, gid, token, received)
        with srv.client() as stranger:  # no seat cookie
            public = [stranger.get(f"/api/games/{gid}/state").text]
        seat_thread.join(60)
        pub_thread.join(60)
        final = GameStore(db).load(gid)
        assert final.over and any(m.author == "Robin" for m in final.messages)
        assert final.night_actions and final.night_results
        seat_lines = [line for _, line in seat_events]
        assert seat_events[-1][0]["type"] == "end"
        assert leaks(received + seat_lines, final, "Robin") == []
        pub_problems = leaks(public + [line for _, line in pub_events], final, None)
        assert pub_problems == [], "\n".join(pub_problems)
        # The canary really flowed: reasons and notes carry nonces that no seat ever saw.
        secret = {n for v in final.votes for n in NONCE_RE.findall(v.reason)}
        secret |= {n for s in final.summaries for n in NONCE_RE.findall(s.notes.model_dump_json())}
        assert secret
        everything = " ".join(received + seat_lines)
        assert not secret & set(NONCE_RE.findall(everything))
        seen_public = set(NONCE_RE.findall(everything))
        assert seen_public  # public chat nonces do reach the seat
        if role is Role.WEREWOLF and any(m.channel == "pack" for m in final.messages):
            assert any(e["type"] == "message" and e["channel"] == "pack" for e, _ in seat_events)
        # Once the game is over, the god view opens for everyone.
        god = c.get(f"/api/games/{gid}/god")
        assert god.status_code == 200 and "zs01x" in god.text


def test_the_human_sees_their_role_and_pack(tmp_path):
    with LiveServer(tmp_path / "web.sqlite", llm_factory=canary_llm) as srv, srv.client() as c:
        gid, token = find_seed(srv, c, Role.WEREWOLF, 9)
        state = srv.manager.live(gid).state
        snap = c.get(f"/api/games/{gid}/state", headers={"X-Seat-Token": token}).json()
        mates = sorted(w for w in state.wolves() if w != "Robin")
        assert snap["me"]["role"] == "werewolf" and sorted(snap["me"]["pack"]) == mates
        shown = {p["name"]: p["role"] for p in snap["players"] if p["role"]}
        assert shown == {"Robin": "werewolf", **{m: "werewolf" for m in mates}}
        # Someone else's story never; one's own, yes.
        assert snap["me"]["story"] == "A human player." and "zs0" not in json.dumps(snap)


# ---- bad requests -----------------------------------------------------------------------------


BAD_CREATES = [
    ({"players": 4}, "players"),
    ({"players": 13}, "players"),
    ({"players": 5, "wolves": 3}, "wolves"),
    ({"players": 5, "colour": "red"}, "colour"),
    ({"players": 5, "human": "<script>"}, "name"),
    ({"players": 5, "human": "Moderator"}, "reserved"),
    ({"players": 5, "human": "x" * 17}, "name"),
    ({"players": 5, "models": ["fake"] * 4}, "models"),
    ({"players": 5, "model": "openai/gpt-4o"}, "not offered"),
    ({"players": 5, "rules": {"gravity": "off"}}, "unknown rule"),
    ({"players": 5, "theme": "<img src=x>"}, "theme"),
    ({"players": 5, "seed": -1}, "seed"),
    ({"players": 5, "step_delay_s": 99}, "step_delay_s"),
    ({"players": 5, "cast": cast(4)}, "cast"),
    ({"players": 5, "cast": [{"name": "Ann"}] * 5}, "unique"),
    ({"players": 5, "cast": [{"name": f"A{i}", "playstyle": "sneaky"} for i in range(5)]},
     "playstyle"),
    ({"players": "five"}, "players"),
]


@pytest.mark.parametrize("body,word", BAD_CREATES)
def test_bad_game_setups_are_refused_with_a_message(tmp_path, body, word):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        r = c.post("/api/games", json=body)
        assert 400 <= r.status_code < 500, r.text
        assert word in r.json()["error"]
        assert c.get("/api/games").json() == []


def test_bad_moves_are_refused_and_change_nothing(tmp_path):
    db = tmp_path / "web.sqlite"
    with LiveServer(db) as srv, srv.client() as c:
        # Bots pause 0.3 s between steps: the out-of-turn vote at the end is posted right after
        # a step, so the bots cannot make it Robin's turn in between (without a pause they could)
        r = c.post("/api/games", json={"players": 5, "seed": 0, "human": "Robin",
                                       "max_messages_per_day": 3, "step_delay_s": 0.3})
        gid, token = r.json()["id"], r.json()["token"]
        bots = c.post("/api/games", json={"players": 5, "seed": 0}).json()["id"]
        c.cookies.clear()  # the seat is proven by the header below, or not at all
        seat = {"X-Seat-Token": token}
        game = srv.manager.live(gid)
        wait_for(lambda: (t := game.state.queue) and t[0] == "Robin")
        at = game.state.model_dump_json()
        act = f"/api/games/{gid}/act"
        cases = [
            ("POST", act, {}, {"kind": "speak", "text": "hi"}, 403),  # no token
            ("POST", act, {"X-Seat-Token": "forged"}, {"kind": "speak", "text": "hi"}, 403),
            ("POST", act, seat, {"kind": "vote", "target": "Bram"}, 409),  # wrong kind
            ("POST", act, seat, {"kind": "speak", "text": "x" * (MAX_LINE_CHARS + 1)}, 422),
            ("POST", act, seat, {"kind": "speak", "text": "hi\x00there"}, 422),
            ("POST", act, seat, {"kind": "speak", "target": "Bram"}, 422),
            ("POST", act, seat, {"kind": "vote"}, 422),
            ("POST", act, seat, {"kind": "dance"}, 422),
            ("POST", act, {**seat, "Content-Type": "application/json"}, "not json", 422),
            ("POST", act, seat, "not json", 403),  # no JSON type, no Origin: not from the app
            ("POST", f"/api/games/{gid}/control", {}, {"action": "pause"}, 409),
            ("POST", f"/api/games/{gid}/control", {}, {"action": "explode"}, 422),
            ("POST", f"/api/games/{gid}/join", {}, {"name": "Robin"}, 409),  # seat taken
            ("POST", f"/api/games/{gid}/join", {}, {"name": "Bram"}, 404),
            ("POST", f"/api/games/{bots}/join", {}, {"name": "Robin"}, 404),
            ("GET", "/api/games/nope/state", {}, None, 404),
            ("GET", "/api/games/..%2F..%2Fetc/state", {}, None, 404),
            ("GET", f"/api/games/{gid}/state?view=root", {}, None, 422),
            ("GET", f"/api/games/{gid}/calls?step=-1", {}, None, 422),
            ("GET", f"/api/games/{gid}/calls", {}, None, 422),
            ("GET", f"/api/games/{gid}/replay", {}, None, 409),
            ("GET", f"/api/games/{gid}/god", {}, None, 403),
            ("GET", f"/api/games/{gid}/events?view=god", {}, None, 403),
            ("POST", f"/api/games/{bots}/control", {}, {"action": "step"}, 409),  # not paused
        ]
        for method, path, headers, body, status in cases:
            kwargs = {"content": body} if isinstance(body, str) else {"json": body}
            r = c.request(method, path, headers=headers, **(kwargs if body is not None else {}))
            assert r.status_code == status, (path, body, r.status_code, r.text)
            assert r.json()["error"], (path, body)
            assert game.state.model_dump_json() == at, (path, body)
        # The intro is Robin's; after it, a vote is not Robin's to cast.
        r = c.post(act, headers=seat, json={"kind": "speak", "text": "Hello all"})
        assert r.status_code == 200
        wait_for(lambda: game.state.phase == "vote" or (game.state.queue
                                                         and game.state.queue[0] == "Robin"))
        want = srv.manager.live(gid)
        if want.state.phase == "vote" and want.state.queue[0] != "Robin":
            r = c.post(act, headers=seat, json={"kind": "vote", "target": "Bram"})
            assert r.status_code == 409 and "not your turn" in r.json()["error"]


def test_illegal_targets_are_refused(tmp_path):
    with LiveServer(tmp_path / "web.sqlite") as srv, srv.client() as c:
        r = c.post("/api/games", json={"players": 5, "seed": 0, "human": "Robin",
                                       "max_messages_per_day": 1})
        gid, token = r.json()["id"], r.json()["token"]
        seat = {"X-Seat-Token": token}
        game = srv.manager.live(gid)
        while True:  # pass every chat turn until Robin must vote or act at night
            turn = wait_for(lambda: (s := c.get(f"/api/games/{gid}/state",
                                                headers=seat).json())["turn"]["turn"]
                            and (s["turn"]["turn"]["yours"] or s["game"]["over"]) and s)
            if turn["game"]["over"]:
                pytest.skip("Robin died before a targeted decision")
            t = turn["turn"]["turn"]
            if t["kind"] in ("vote", "night"):
                break
            c.post(f"/api/games/{gid}/act", headers=seat, json={"kind": t["kind"], "text": ""})
        at = game.state.model_dump_json()
        for target in ("Robin", "Nobody", "", "Bram; DROP TABLE games"):
            if target in t["legal_targets"]:
                continue
            r = c.post(f"/api/games/{gid}/act", headers=seat,
                       json={"kind": t["kind"], "target": target})
            assert r.status_code == 422 and r.json()["error"]
            assert game.state.model_dump_json() == at
