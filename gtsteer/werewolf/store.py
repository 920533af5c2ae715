"""SQLite persistence: one transaction per step, holding the new state with that step's records.

A step's snapshot, decision, messages, votes, night actions, summaries and LLM calls land
together or not at all, so a process killed at any moment leaves the last committed state and
resuming replays the in-flight step from the cache; the step number is checked on write. The
file's `PRAGMA user_version` is its schema version: an older file is migrated in one
transaction, a newer one refused. A storage failure is a `StoreError` saying what to do.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gtsteer.llm import StorageError, default_cache_dir
from gtsteer.werewolf.llmcalls import CallRecord
from gtsteer.werewolf.state import Decision, GameState, load_snapshot, migrate_state

#: The schema this gtsteer writes. 0: before versions (night_actions without `failed` and
#: `notified`, summaries without `error`, llm_calls without `sent` and `day`, version-1 states).
DB_VERSION = 1
#: Columns added since version 0, with the value old rows get: a mechanical migration.
ADDED_COLUMNS = {
    "night_actions": {"failed": "INTEGER DEFAULT 0", "notified": "TEXT DEFAULT '[]'"},
    "summaries": {"error": "TEXT"},
    "llm_calls": {"sent": "TEXT DEFAULT '[]'", "day": "INTEGER"},
}

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


class StoreError(StorageError):
    """The game database cannot be opened, read or written; the message says what to do."""


def store_error(path: Path, exc: BaseException) -> StoreError:
    text = str(exc)
    if "malformed" in text or "not a database" in text:
        how = (f"the file is damaged; move it aside (mv {path} {path}.damaged) and use a new "
               f"--db (`sqlite3 {path} .recover` may save its games)")
    elif "full" in text or getattr(exc, "errno", None) == 28:
        how = ("the disk is full; the last committed step is kept: free space (or move the file "
               "to another disk) and `gtsteer werewolf resume` the game")
    elif "readonly" in text or isinstance(exc, PermissionError):
        how = "the file or its folder is not writable; fix the permissions or use another --db"
    elif "locked" in text:
        how = "another process held it for 30 s; retry when it is done"
    elif "unable to open" in text:
        how = "its folder is missing or not writable; give another --db"
    else:
        how = "give another --db"
    return StoreError(f"werewolf database {path}: {text}: {how}")


class StaleStep(RuntimeError):
    """The stored game has moved past the state this step started from."""


def default_db_path() -> Path:
    return default_cache_dir() / "werewolf.sqlite"


class GameStore:
    def __init__(self, path: str | Path | None = None, *, read_only: bool = False):
        """`read_only`: for commands that only read, so an unwritable file is still read."""
        self.path = Path(path) if path else default_db_path()
        if self.path.is_dir():
            raise StoreError(f"--db {self.path} is a directory; give a file, e.g. "
                             f"{self.path / 'werewolf.sqlite'}")
        try:
            self._open()
        except StoreError as refused:
            if not (read_only and self.path.is_file()):
                raise
            try:  # e.g. a read-only mount: WAL mode and migrations need writes, reading not
                self._open_read_only()
            except (sqlite3.Error, OSError):
                raise refused from None

    @classmethod
    def fresh(cls, path: str | Path) -> GameStore:
        """An empty store at `path`, an earlier database there deleted with its WAL files."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return cls(path)

    def _open(self) -> None:
        with self._guard():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            version = self._version()
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            if version < DB_VERSION:
                self._migrate()

    def _open_read_only(self) -> None:
        """`mode=ro` still needs the WAL's shared-memory file; in a read-only folder,
        `immutable=1` reads the file as it lies (nothing can be writing to it there)."""
        uri = self.path.resolve().as_uri()
        try:
            self.conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30)
            version = self._version()
        except sqlite3.OperationalError:
            self.conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
            version = self._version()
        if version < DB_VERSION:
            self.conn.close()
            raise StoreError(f"werewolf database {self.path} has schema version {version} and is"
                             " read-only here, so it cannot be brought to the current version;"
                             " copy it to a writable folder and give that --db")

    def _version(self) -> int:
        version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        if version > DB_VERSION:
            self.conn.close()
            raise StoreError(f"werewolf database {self.path} has schema version {version}; this "
                             f"gtsteer reads versions 0 to {DB_VERSION}: use the gtsteer that "
                             "wrote it, or a new --db")
        return version

    def _migrate(self) -> None:
        """Create the tables, or bring a version-0 file up to `DB_VERSION` in one transaction."""
        with self._tx() as c:
            if int(c.execute("PRAGMA user_version").fetchone()[0]) >= DB_VERSION:
                return  # another process migrated it while we waited for the lock
            summaries = {row[1] for row in c.execute("PRAGMA table_info(summaries)")}
            if summaries and "error" not in summaries:  # before the rule tables (migrate_state)
                # a summary's day was the dawn it was written on; now it is the day summarised
                # (two passes: the primary key must hold after each row's update)
                c.execute("UPDATE summaries SET day = -(day - 1)")
                c.execute("UPDATE summaries SET day = -day")
            for table, added in ADDED_COLUMNS.items():
                have = {row[1] for row in c.execute(f"PRAGMA table_info({table})")}
                for name, decl in added.items():
                    if have and name not in have:
                        c.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)
            self._check_columns(c)
            for game_id, text in c.execute("SELECT id, state FROM games").fetchall():
                try:
                    data = json.loads(text)
                    new = migrate_state(data)
                except (ValueError, AttributeError):
                    continue  # loading that game names the problem; the others stay usable
                if new is not data:
                    c.execute("UPDATE games SET state=? WHERE id=?", (json.dumps(new), game_id))
            c.execute(f"PRAGMA user_version = {DB_VERSION}")

    def _check_columns(self, c: sqlite3.Connection) -> None:
        """Every table has today's columns (an unknown older layout is refused, not guessed)."""
        want = sqlite3.connect(":memory:")
        want.executescript(SCHEMA)
        for (table,) in want.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                     "AND name NOT LIKE 'sqlite_%'").fetchall():
            need = [r[1] for r in want.execute(f"PRAGMA table_info({table})")]
            have = {r[1] for r in c.execute(f"PRAGMA table_info({table})")}
            missing = [n for n in need if n not in have]
            if missing:
                raise StoreError(f"werewolf database {self.path}: table {table} lacks columns "
                                 f"{missing}, a layout this gtsteer (schema version {DB_VERSION}) "
                                 "cannot migrate; use a new --db")
        want.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """sqlite and file-system failures as one `StoreError` line naming the file."""
        try:
            yield
        except sqlite3.IntegrityError:
            raise  # a step stored twice is a bug to see, not a storage failure
        except (sqlite3.DatabaseError, OSError) as exc:
            raise store_error(self.path, exc) from None

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._guard():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:  # SQLite may have rolled back itself (disk full)
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

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

    def load(self, game_id: str) -> GameState:
        with self._guard():
            row = self.conn.execute("SELECT state FROM games WHERE id=?", (game_id,)).fetchone()
        if row is None:
            raise GameNotFound(game_id)
        return load_snapshot(row[0], f"{self.path}, game {game_id}")

    def games(self) -> list[tuple[str, str, str | None, int]]:
        with self._guard():
            return list(self.conn.execute(
                "SELECT id, status, winner, step FROM games ORDER BY created_at"))

    def calls(self, game_id: str) -> list[CallRecord]:
        with self._guard():
            rows = self._call_rows(game_id)
        return [CallRecord(bot=r[0], purpose=r[1], model=r[2], prompt=r[3], response=r[4],
                           seed=r[5], cached=bool(r[6]), attempts=r[7], prompt_tokens=r[8],
                           completion_tokens=r[9], latency_s=r[10], error=r[11],
                           sent=json.loads(r[13] or "[]"), day=r[14],
                           extra={"step": r[12]}) for r in rows]

    def _call_rows(self, game_id: str) -> list[tuple]:
        return self.conn.execute(
            "SELECT bot, purpose, model, prompt, response, seed, cached, attempts, "
            "prompt_tokens, completion_tokens, latency_s, error, step, sent, day FROM llm_calls "
            "WHERE game_id=? ORDER BY id", (game_id,)).fetchall()

    def steps(self, game_id: str) -> list[Decision]:
        with self._guard():
            rows = self.conn.execute(
                "SELECT decision, info_state FROM steps WHERE game_id=? ORDER BY step",
                (game_id,)).fetchall()
        out = []
        for decision, info in rows:
            d = Decision.model_validate_json(decision)
            d.info_state = json.loads(info) if info else None
            out.append(d)
        return out
