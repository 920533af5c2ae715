"""The web app's own tables, next to the game store's in the same SQLite file.

`web_games` marks games the server drives (so a restart resumes them) with their pace, pause
flag and metered cost; `web_seats` binds a human seat to the SHA-256 of its secret token (the
token itself is never stored). Game facts stay in the engine's tables (gtsteer.werewolf.store).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import BaseModel

SCHEMA = """
CREATE TABLE IF NOT EXISTS web_games (
  game_id TEXT PRIMARY KEY, created_at REAL, paused INTEGER, step_delay_s REAL,
  cost_usd REAL);
CREATE TABLE IF NOT EXISTS web_seats (
  game_id TEXT, name TEXT, token_sha256 TEXT, joined_at REAL, PRIMARY KEY (game_id, name));
"""


class WebGame(BaseModel):
    game_id: str
    paused: bool = False
    step_delay_s: float = 0.0
    cost_usd: float = 0.0


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class WebDB:
    """Thread-safe: one connection guarded by a lock (these writes are tiny)."""

    def __init__(self, path: str | Path):
        self.conn = sqlite3.connect(str(path), isolation_level=None, timeout=30,
                                    check_same_thread=False)
        self.lock = threading.Lock()
        with self.lock:
            self.conn.executescript(SCHEMA)

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def add_game(self, game_id: str, step_delay_s: float = 0.0, paused: bool = False) -> None:
        with self.lock:
            self.conn.execute("INSERT OR IGNORE INTO web_games VALUES (?,?,?,?,?)",
                              (game_id, time.time(), int(paused), step_delay_s, 0.0))

    def game(self, game_id: str) -> WebGame | None:
        return self.games().get(game_id)

    def games(self) -> dict[str, WebGame]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT game_id, paused, step_delay_s, cost_usd FROM web_games").fetchall()
        return {r[0]: WebGame(game_id=r[0], paused=bool(r[1]), step_delay_s=r[2],
                              cost_usd=r[3]) for r in rows}

    def set_paused(self, game_id: str, paused: bool) -> None:
        with self.lock:
            self.conn.execute("UPDATE web_games SET paused=? WHERE game_id=?",
                              (int(paused), game_id))

    def add_cost(self, game_id: str, cost_usd: float) -> None:
        if cost_usd:
            with self.lock:
                self.conn.execute("UPDATE web_games SET cost_usd=cost_usd+? WHERE game_id=?",
                                  (cost_usd, game_id))

    def claim_seat(self, game_id: str, name: str) -> str | None:
        """A new secret token for the seat, or None if the seat was already claimed."""
        token = secrets.token_urlsafe(24)
        with self.lock:
            cur = self.conn.execute("INSERT OR IGNORE INTO web_seats VALUES (?,?,?,?)",
                                    (game_id, name, _digest(token), time.time()))
        return token if cur.rowcount == 1 else None

    def seat_of(self, game_id: str, token: str | None) -> str | None:
        """The seat this token opens in this game (constant-time compare), or None."""
        if not token:
            return None
        with self.lock:
            rows = self.conn.execute("SELECT name, token_sha256 FROM web_seats WHERE game_id=?",
                                     (game_id,)).fetchall()
        digest = _digest(token)
        for name, stored in rows:
            if hmac.compare_digest(stored, digest):
                return name
        return None
