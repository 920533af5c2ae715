"""SQLite persistence: one transaction per step, holding the new state with that step's records.

A step is committed with `BEGIN IMMEDIATE ... COMMIT`: the state snapshot, the decision (with
the playstyle choice and the information state), the new messages, votes, night actions,
summaries and every LLM request/response of the step land together or not at all. A process
killed at any moment therefore leaves the last committed state, and resuming replays the
in-flight step (its LLM calls are cache hits). The step number is checked on write, so a step
can never be stored twice.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gtsteer.llm import default_cache_dir
from gtsteer.werewolf.llmcalls import CallRecord
from gtsteer.werewolf.state import Decision, GameState

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
  id TEXT PRIMARY KEY, created_at REAL, seed INTEGER, config TEXT, scene TEXT,
  status TEXT, winner TEXT, step INTEGER, state TEXT);
CREATE TABLE IF NOT EXISTS players (
  game_id TEXT, name TEXT, role TEXT, story TEXT, playstyle TEXT, model TEXT, human INTEGER,
  PRIMARY KEY (game_id, name));
CREATE TABLE IF NOT EXISTS steps (
  game_id TEXT, step INTEGER, kind TEXT, actor TEXT, decision TEXT, playstyle TEXT,
  info_state TEXT, created_at REAL, PRIMARY KEY (game_id, step));
CREATE TABLE IF NOT EXISTS messages (
  game_id TEXT, id INTEGER, step INTEGER, day INTEGER, phase TEXT, channel TEXT, author TEXT,
  text TEXT, visible_to TEXT, PRIMARY KEY (game_id, id));
CREATE TABLE IF NOT EXISTS votes (
  game_id TEXT, day INTEGER, ord INTEGER, step INTEGER, voter TEXT, target TEXT, reason TEXT,
  fallback INTEGER, error TEXT, PRIMARY KEY (game_id, day, ord));
CREATE TABLE IF NOT EXISTS night_actions (
  game_id TEXT, night INTEGER, seq INTEGER, step INTEGER, actor TEXT, role TEXT, verb TEXT,
  target TEXT, result TEXT, blocked INTEGER, fallback INTEGER, error TEXT, observers TEXT,
  failed INTEGER, notified TEXT, PRIMARY KEY (game_id, night, seq));
CREATE TABLE IF NOT EXISTS summaries (
  game_id TEXT, day INTEGER, bot TEXT, step INTEGER, notes TEXT, fallback INTEGER, error TEXT,
  PRIMARY KEY (game_id, day, bot));
CREATE TABLE IF NOT EXISTS llm_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT, game_id TEXT, step INTEGER, bot TEXT, purpose TEXT,
  model TEXT, prompt TEXT, response TEXT, seed INTEGER, cached INTEGER, attempts INTEGER,
  prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, error TEXT, sent TEXT,
  day INTEGER);
CREATE INDEX IF NOT EXISTS llm_calls_game ON llm_calls (game_id, step);
"""


class GameNotFound(ValueError):
    def __init__(self, game_id: str):
        super().__init__(f"no game {game_id!r} in this database (see `gtsteer werewolf list`)")


class StaleStep(RuntimeError):
    """The stored game has moved past the state this step started from."""


def default_db_path() -> Path:
    return default_cache_dir() / "werewolf.sqlite"


class GameStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(llm_calls)")}
        if "sent" not in columns:
            raise ValueError(f"{self.path} was written by an older gtsteer (no llm_calls.sent "
                             "column); use a new --db file")

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # ---- writes ----------------------------------------------------------------------------

    def create(self, state: GameState, records: Sequence[CallRecord] = ()) -> None:
        with self._tx() as c:
            if c.execute("SELECT 1 FROM games WHERE id=?", (state.game_id,)).fetchone():
                raise ValueError(f"a game {state.game_id!r} already exists in {self.path}; "
                                 "choose another --game-id")
            c.execute(
                "INSERT INTO games VALUES (?,?,?,?,?,?,?,?,?)",
                (state.game_id, time.time(), state.seed, state.config.model_dump_json(),
                 state.scene, state.phase, state.winner, state.step, state.model_dump_json()),
            )
            c.executemany(
                "INSERT INTO players VALUES (?,?,?,?,?,?,?)",
                [(state.game_id, p.name, p.role.value, p.story, p.playstyle, p.model,
                  int(p.human)) for p in state.players],
            )
            self._calls(c, state.game_id, 0, records)

    def commit_step(self, before: GameState, after: GameState, decision: Decision,
                    records: Sequence[CallRecord]) -> None:
        g = after.game_id
        with self._tx() as c:
            row = c.execute("SELECT step FROM games WHERE id=?", (g,)).fetchone()
            if row is None:
                raise GameNotFound(g)
            if row[0] != before.step:
                raise StaleStep(f"game {g} is at step {row[0]}, this step started at "
                                f"{before.step}")
            c.execute(
                "UPDATE games SET status=?, winner=?, step=?, state=? WHERE id=?",
                (after.phase, after.winner, after.step, after.model_dump_json(), g),
            )
            c.execute(
                "INSERT INTO steps VALUES (?,?,?,?,?,?,?,?)",
                (g, after.step, decision.kind, decision.actor,
                 decision.model_dump_json(exclude={"info_state"}), decision.playstyle,
                 json.dumps(decision.info_state) if decision.info_state else None, time.time()),
            )
            wolves = after.wolves()
            for m in after.messages[len(before.messages):]:
                visible = ["*"] if m.channel == "public" else wolves
                c.execute("INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?)",
                          (g, m.id, after.step, m.day, m.phase, m.channel, m.author, m.text,
                           json.dumps(visible)))
            for v in after.votes[len(before.votes):]:
                c.execute("INSERT INTO votes VALUES (?,?,?,?,?,?,?,?,?)",
                          (g, v.day, v.order, after.step, v.voter, v.target, v.reason,
                           int(v.fallback), v.error))
            start = len(before.night_actions)
            for i, a in enumerate(after.night_actions[start:], start):
                c.execute("INSERT INTO night_actions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          (g, a.night, i, after.step, a.actor, a.role.value, a.verb, a.target,
                           a.result, int(a.blocked), int(a.fallback), a.error,
                           json.dumps(a.observers), int(a.failed), json.dumps(a.notified)))
            for s in after.summaries[len(before.summaries):]:
                c.execute("INSERT INTO summaries VALUES (?,?,?,?,?,?,?)",
                          (g, s.day, s.bot, after.step, s.notes.model_dump_json(),
                           int(s.fallback), s.error))
            self._calls(c, g, after.step, records)

    def _calls(self, c: sqlite3.Connection, game_id: str, step: int,
               records: Sequence[CallRecord]) -> None:
        c.executemany(
            "INSERT INTO llm_calls (game_id, step, bot, purpose, model, prompt, response, seed, "
            "cached, attempts, prompt_tokens, completion_tokens, latency_s, error, sent, day) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(game_id, step, r.bot, r.purpose, r.model, r.prompt, r.response, r.seed,
              int(r.cached), r.attempts, r.prompt_tokens, r.completion_tokens, r.latency_s,
              r.error, json.dumps(r.sent), r.day) for r in records],
        )

    # ---- reads -----------------------------------------------------------------------------

    def load(self, game_id: str) -> GameState:
        row = self.conn.execute("SELECT state FROM games WHERE id=?", (game_id,)).fetchone()
        if row is None:
            raise GameNotFound(game_id)
        return GameState.model_validate_json(row[0])

    def games(self) -> list[tuple[str, str, str | None, int]]:
        return list(self.conn.execute(
            "SELECT id, status, winner, step FROM games ORDER BY created_at"))

    def calls(self, game_id: str) -> list[CallRecord]:
        rows = self.conn.execute(
            "SELECT bot, purpose, model, prompt, response, seed, cached, attempts, "
            "prompt_tokens, completion_tokens, latency_s, error, step, sent, day FROM llm_calls "
            "WHERE game_id=? ORDER BY id", (game_id,)).fetchall()
        return [CallRecord(bot=r[0], purpose=r[1], model=r[2], prompt=r[3], response=r[4],
                           seed=r[5], cached=bool(r[6]), attempts=r[7], prompt_tokens=r[8],
                           completion_tokens=r[9], latency_s=r[10], error=r[11],
                           sent=json.loads(r[13] or "[]"), day=r[14],
                           extra={"step": r[12]}) for r in rows]

    def steps(self, game_id: str) -> list[Decision]:
        rows = self.conn.execute(
            "SELECT decision, info_state FROM steps WHERE game_id=? ORDER BY step", (game_id,))
        out = []
        for decision, info in rows:
            d = Decision.model_validate_json(decision)
            d.info_state = json.loads(info) if info else None
            out.append(d)
        return out
