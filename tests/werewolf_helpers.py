"""Shared builders for the werewolf tests (plain functions, imported by the test modules)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np

from gtsteer.llm import Backend, RawCompletion
from gtsteer.llm.embed import Embedder
from gtsteer.werewolf.engine import new_game
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameConfig, GameState

NAMES = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kim", "Leo"]
SHORT = {"W": Role.WEREWOLF, "V": Role.VILLAGER, "D": Role.DOCTOR, "T": Role.DETECTIVE,
         "M": Role.MANIAC}


def table(roles: str, seed: int = 0, **kwargs) -> GameState:
    """A game whose seats have exactly these roles, e.g. "WWDTMVV" -> Ann=werewolf, ...;
    `kwargs` are `GameConfig` fields (rules, limits) and `new_game`'s seat arguments."""
    n = len(roles)
    cast = [(NAMES[i], f"story of {NAMES[i]}", "balanced") for i in range(n)]
    setup = {k: kwargs.pop(k) for k in list(kwargs) if k in GameConfig.model_fields}
    config = GameConfig(n_players=n, n_wolves=roles.count("W"), maniac="M" in roles, **setup)
    state = new_game(cast, config, seed=seed, **kwargs)
    for p, r in zip(state.players, roles, strict=True):
        p.role = SHORT[r]
    return state


def play_night(state: GameState, choices: dict[str, str]) -> tuple[GameState, list[str]]:
    """Answer every pending night decision from `choices`: slot -> "Target" (the slot's own
    action) or "action:Target" (e.g. the doctor's one-time kill, "kill:Ann")."""
    from gtsteer.werewolf.engine import pending, step
    from gtsteer.werewolf.state import Decision

    asked: list[str] = []
    while state.phase == "night":
        want = pending(state)
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor,
                                         text=f"{want.actor} says hm"))
            continue
        asked.append(want.verb)
        action, _, target = choices[want.verb].rpartition(":")
        state = step(state, Decision(kind="night", actor=want.actor, target=target,
                                     action=action or None))
    return state, asked


def finish_summaries(state: GameState) -> GameState:
    """Answer the summaries that close a night (empty notes), so the next day starts."""
    from gtsteer.werewolf.engine import pending, step
    from gtsteer.werewolf.state import Decision

    while state.phase == "summary":
        state = step(state, Decision(kind="summary", actor=pending(state).actor))
    return state


NONCE = r"zq\d{5}x"


class CanaryBackend(Backend):
    """A test model that writes a fresh nonce into every free-text output (speech, reasons,
    notes fields, the router's reason), breaks every third structured answer so the LLM layer
    retries with feedback, has no grammar (so schema hints are added), and keeps every request
    text it receives with what it answered."""

    kind = "canary"
    supports_grammar = False
    max_concurrency = 1

    def __init__(self) -> None:
        super().__init__("canary")
        self.n = 0
        self.structured = 0
        self.seen: list[str] = []
        self.outputs: list[tuple[str, str]] = []

    def nonce(self) -> str:
        self.n += 1
        return f"zq{self.n:05d}x"

    def _fill(self, schema: dict, root: dict):
        if "$ref" in schema:
            return self._fill(root["$defs"][schema["$ref"].split("/")[-1]], root)
        if "enum" in schema:
            return schema["enum"][self.n % len(schema["enum"])]
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type", "object")
        if kind == "object":
            return {k: self._fill(v, root) for k, v in schema["properties"].items()}
        if kind == "array":
            return [self._fill(schema["items"], root)
                    for _ in range(max(1, schema.get("minItems", 1)))]
        return self.nonce()

    async def complete(self, request, json_schema=None) -> RawCompletion:
        text = request.as_text()
        self.seen.append(text)
        if json_schema is None:
            out = f"I think {self.nonce()} matters."
        else:
            self.structured += 1
            out = (f"no json {self.nonce()}" if self.structured % 3 == 0
                   else json.dumps(self._fill(json_schema, json_schema)))
        self.outputs.append((text, out))
        return RawCompletion(text=out)

    async def score_options(self, request, options):
        self.seen.append(request.as_text())
        return {o: -float((sum(map(ord, o)) + self.n) % 7) for o in options}


def hash_embedder(name: str = "test-hash") -> Embedder:
    """A deterministic 32-d embedding of the text's bytes (no model to load)."""

    def encode(texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8) for t in texts]
        return np.stack(rows).astype(np.float32) / 255.0

    return Embedder(name, 32, encode, cache=False)


#: The columns of a call record that tell how the cache answered (a rerun reads them all).
HIT_COLUMNS = ("cached", "sent", "attempts", "prompt_tokens", "completion_tokens")


def database(path: Path, *, hits: bool = True) -> dict[str, list[tuple]]:
    """Every table's rows in storage order, without wall-clock columns (and without the
    `HIT_COLUMNS` unless `hits`)."""
    skip = ("created_at", "latency_s", *(() if hits else HIT_COLUMNS))
    conn = sqlite3.connect(path)
    try:
        out = {}
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                              "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
        for (table,) in tables:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")
                    if r[1] not in skip]
            out[table] = conn.execute(f"SELECT {', '.join(cols)} FROM {table} "
                                      "ORDER BY rowid").fetchall()
        return out
    finally:
        conn.close()
