"""The router: after each round of speakers, a model picks who talks next, and code makes the
rules hold whatever it said (at least one of the least active players, or loud bots crowd the
quiet ones out; filled at random, seeded, to MIN_SPEAKERS).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from gtsteer.werewolf.context import public_chat_lines
from gtsteer.werewolf.llmcalls import CallRecord, LLMPool, call_structured
from gtsteer.werewolf.prompts import router_prompt
from gtsteer.werewolf.rules import MAX_SPEAKERS, MIN_SPEAKERS, derive_seed, rng
from gtsteer.werewolf.state import Decision, GameState, Pending


def router_schema(legal: list[str], with_reason: bool = True) -> type[BaseModel]:
    """Speakers drawn from the legal names; no `reason` for the small local base model."""
    speaker: Any = Literal[tuple(legal)]  # built at run time, so a value, not a type to mypy
    fields: dict[str, Any] = {
        "speakers": (list[speaker], Field(min_length=1, max_length=MAX_SPEAKERS))
    }
    if with_reason:
        fields["reason"] = (str, Field(max_length=400))
    return create_model("RouterPick", **fields)


def least_active(state: GameState, legal: list[str]) -> list[str]:
    counts = state.spoken_today()
    fewest = min(counts.get(n, 0) for n in legal)
    return [n for n in legal if counts.get(n, 0) == fewest]


def fix_speakers(state: GameState, picked: list[str], legal: list[str]) -> list[str]:
    r = rng(state.seed, state.step, "router-fill")
    out = [n for n in dict.fromkeys(picked) if n in legal][:MAX_SPEAKERS]
    quiet = least_active(state, legal)
    if not any(n in quiet for n in out):
        choice = r.choice(quiet)
        out = [choice, *out][:MAX_SPEAKERS]
    rest = [n for n in legal if n not in out]
    r.shuffle(rest)
    while len(out) < min(MIN_SPEAKERS, len(legal)):
        out.append(rest.pop())
    return out


def route(state: GameState, want: Pending, pool: LLMPool) -> tuple[Decision, list[CallRecord]]:
    legal = want.legal_targets
    quiet = least_active(state, legal)
    prompt = router_prompt(state.living(), state.spoken_today(), public_chat_lines(state),
                           legal, quiet)
    seed = derive_seed(state.seed, state.step, "router")
    model = state.router_model
    local = pool.completion_style(model)
    if local:
        prompt += "\nJSON:"
    value, rec = call_structured(pool, model, prompt, router_schema(legal, not pool.small(model)),
                                 bot="(router)",
                                 purpose="route", seed=seed, max_tokens=80)
    picked = list(getattr(value, "speakers", []) or [])
    speakers = fix_speakers(state, picked, legal)
    return Decision(kind="route", speakers=speakers, reason=getattr(value, "reason", ""),
                    fallback=value is None, error=rec.error), [rec]
