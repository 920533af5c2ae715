"""Shared builders for the werewolf tests (plain functions, imported by the test modules)."""

from __future__ import annotations

import json

from gtsteer.llm import Backend, RawCompletion
from gtsteer.werewolf.engine import new_game
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameState

NAMES = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kim", "Leo"]
SHORT = {"W": Role.WEREWOLF, "V": Role.VILLAGER, "D": Role.DOCTOR, "T": Role.DETECTIVE,
         "M": Role.MANIAC}


def table(roles: str, seed: int = 0, **kwargs) -> GameState:
    """A game whose seats have exactly these roles, e.g. "WWDTMVV" -> Ann=werewolf, ..."""
    n = len(roles)
    cast = [(NAMES[i], f"story of {NAMES[i]}", "balanced") for i in range(n)]
    wolves = roles.count("W")
    state = new_game(cast, seed=seed, n_wolves=wolves, maniac="M" in roles, **kwargs)
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
