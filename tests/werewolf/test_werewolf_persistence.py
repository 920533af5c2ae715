"""Determinism, atomic steps, resume after a kill (simulated and a real SIGKILL), and the CLI."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore, StaleStep


def play(db, seed=5, n=7, game_id="g", max_steps=None, **kw):
    store = GameStore(db)
    state = create_game(store, GameConfig(n_players=n, max_messages_per_day=4), seed=seed,
                        game_id=game_id, **kw)
    return store, GameRunner(store).run(state, max_steps=max_steps)


def log_of(store: GameStore, game_id: str) -> dict:
    """Everything stored about a game, minus wall-clock times and cache-hit flags."""
    c = store.conn
    tables = {
        "messages": "SELECT id, step, day, phase, channel, author, text, visible_to FROM "
                    "messages WHERE game_id=? ORDER BY id",
        "votes": "SELECT day, ord, step, voter, target, reason, fallback FROM votes "
                 "WHERE game_id=? ORDER BY day, ord",
        "night": "SELECT night, seq, step, actor, verb, target, result, blocked, observers "
                 "FROM night_actions WHERE game_id=? ORDER BY night, seq",
        "summaries": "SELECT day, bot, step, notes FROM summaries WHERE game_id=? "
                     "ORDER BY day, bot",
        "steps": "SELECT step, kind, actor, decision, playstyle, info_state FROM steps "
                 "WHERE game_id=? ORDER BY step",
        "calls": "SELECT step, bot, purpose, model, prompt, response, seed FROM llm_calls "
                 "WHERE game_id=? ORDER BY id",
    }
    out = {k: c.execute(q, (game_id,)).fetchall() for k, q in tables.items()}
    out["state"] = c.execute("SELECT state FROM games WHERE id=?", (game_id,)).fetchone()[0]
    return out


def test_same_seed_same_game(tmp_path, monkeypatch):
    store1, a = play(tmp_path / "1.sqlite")
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "other-cache"))  # no shared cache
    store2, b = play(tmp_path / "2.sqlite")
    assert a == b and a.over
    assert log_of(store1, "g") == log_of(store2, "g")
    _, c = play(tmp_path / "3.sqlite", seed=6)
    assert c.messages != a.messages


@pytest.mark.parametrize("trial", range(4))
def test_resume_after_kill_at_random_points(tmp_path, trial):
    ref_store, ref = play(tmp_path / "ref.sqlite", seed=trial, n=6 + trial)
    cut = random.Random(trial).randrange(1, ref.step)
    store, partial = play(tmp_path / "cut.sqlite", seed=trial, n=6 + trial, max_steps=cut)
    assert partial.step == cut and not partial.over
    store.close()
    del partial  # the process state is gone; only the database is left
    again = GameStore(tmp_path / "cut.sqlite")
    final = GameRunner(again).run(again.load("g"))
    assert final == ref
    assert log_of(again, "g") == log_of(ref_store, "g")


class CrashingStore(GameStore):
    """Dies inside the transaction of one step, after its LLM calls were made."""

    def __init__(self, path, crash_at: int):
        super().__init__(path)
        self.crash_at = crash_at

    def _calls(self, c, game_id, step, records):
        super()._calls(c, game_id, step, records)
        if step == self.crash_at:
            raise KeyboardInterrupt("killed mid-commit")


def test_crash_inside_a_step_loses_and_duplicates_nothing(tmp_path):
    ref_store, ref = play(tmp_path / "ref.sqlite", seed=9)
    store = CrashingStore(tmp_path / "c.sqlite", crash_at=17)
    state = create_game(store, GameConfig(n_players=7, max_messages_per_day=4), seed=9, game_id="g")
    with pytest.raises(KeyboardInterrupt):
        GameRunner(store).run(state)
    store.close()
    again = GameStore(tmp_path / "c.sqlite")
    assert again.load("g").step == 16  # the step in flight was rolled back whole
    assert again.conn.execute("SELECT max(step) FROM llm_calls").fetchone()[0] == 16
    final = GameRunner(again).run(again.load("g"))
    assert final == ref
    assert log_of(again, "g") == log_of(ref_store, "g")


def test_a_step_cannot_be_committed_twice(tmp_path):
    store = GameStore(tmp_path / "s.sqlite")
    state = create_game(store, GameConfig(n_players=5), seed=1, game_id="g")
    runner = GameRunner(store)
    after = runner.run(state, max_steps=1)
    from gtsteer.werewolf.engine import pending, step

    decision, records = runner.decide(state, pending(state))
    with pytest.raises(StaleStep):
        store.commit_step(state, step(state, decision), decision, records)
    assert store.load("g") == after


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from gtsteer.cli import app; app()", "werewolf", *args]


#: A child that plays the reference game and holds, never returning, inside the commit of
#: step 13 (decided, its LLM calls made, nothing written): the parent SIGKILLs it there.
HELD_CHILD = """
import sys, threading
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import GameConfig
from gtsteer.werewolf.store import GameStore

class HeldStore(GameStore):
    def commit_step(self, before, after, decision, records):
        if after.step == 13:
            print("holding", flush=True)
            threading.Event().wait()
        super().commit_step(before, after, decision, records)

store = HeldStore(sys.argv[1])
state = create_game(store, GameConfig(n_players=7, max_messages_per_day=4), seed=13, game_id="k")
GameRunner(store).run(state)
"""


def test_real_sigkill_then_resume(tmp_path):
    db = tmp_path / "k.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", HELD_CHILD, str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    said = proc.stdout.readline() if ready else ""
    if said != "holding\n":
        proc.kill()
        pytest.fail(f"the child never held at step 13: {proc.communicate()[1]}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = GameStore(db)
    assert killed.load("k").step == 12  # the step in flight left nothing behind
    assert killed.conn.execute("SELECT max(step) FROM llm_calls").fetchone()[0] == 12
    killed.close()
    done = subprocess.run(_cli("resume", "k", "--db", str(db)), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Resuming k" in done.stdout and "Winner" in done.stdout
    ref_store, ref = play(tmp_path / "ref.sqlite", seed=13, game_id="k")
    resumed = GameStore(db)
    assert resumed.load("k") == ref
    assert log_of(resumed, "k") == log_of(ref_store, "k")


def test_cli_play_show_export_act(tmp_path):
    db = str(tmp_path / "cli.sqlite")
    runner = CliRunner()
    res = runner.invoke(app, ["werewolf", "play", "--llm", "fake", "--seed", "2", "--db", db,
                              "--game-id", "c1", "--players", "6", "--max-days", "1"])
    assert res.exit_code == 0, res.output
    assert "Winner" in res.output and "vote 1" in res.output
    res = runner.invoke(app, ["werewolf", "show", "c1", "--db", db])
    assert res.exit_code == 0 and "Day 1" in res.output and "werewolf" in res.output
    snap = tmp_path / "snap.json"
    res = runner.invoke(app, ["werewolf", "export", "c1", "--db", db, "--out", str(snap)])
    assert res.exit_code == 0 and json.loads(snap.read_text())["game_id"] == "c1"
    state = json.loads(snap.read_text())
    bot = next(p["name"] for p in state["players"] if p["alive"])
    res = runner.invoke(app, ["werewolf", "act", "--snapshot", str(snap), "--bot", bot,
                              "--action", "vote", "--llm", "fake"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)  # the usage line goes to stderr
    assert out["target"] in out["legal_targets"] and out["target"] != bot
    res = runner.invoke(app, ["werewolf", "act", "--snapshot", str(snap), "--bot", "Nobody",
                              "--action", "vote"])
    assert res.exit_code == 2 and "no player" in res.output
    res = runner.invoke(app, ["werewolf", "play", "--players", "4", "--db", db, "--llm", "fake"])
    assert res.exit_code == 2 and "between 5 and 12" in res.output
    res = runner.invoke(app, ["werewolf", "resume", "nope", "--db", db])
    assert res.exit_code == 2 and "no game" in res.output


def test_cli_human_plays_in_the_terminal(tmp_path):
    db = str(tmp_path / "h.sqlite")
    # Enough answers for any prompt: chat lines are text, picks are numbers ("1" is valid both).
    res = CliRunner().invoke(
        app, ["werewolf", "play", "--llm", "fake", "--seed", "4", "--db", db, "--game-id", "h",
              "--human", "Zoe", "--players", "5", "--max-days", "2", "--max-messages", "3"],
        input="1\n" * 200,
    )
    assert res.exit_code == 0, res.output
    assert "You are Zoe" in res.output and "Winner" in res.output
    state = GameStore(db).load("h")
    zoe = state.player("Zoe")
    assert zoe.human
    assert any(v.voter == "Zoe" and v.reason == "(human)" for v in state.votes) or not zoe.alive
