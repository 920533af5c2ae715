"""Bot decisions: build the bot's context, ask its model, validate, fall back if it never works.

Fallback (documented): when a vote or night action never validates after the LLM layer's
retries, the bot's target is a seeded random pick from the legal targets, recorded with
`fallback=True` and the error; a summary falls back to empty notes; the game goes on.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, create_model

from gtsteer.werewolf.context import build_context, info_state
from gtsteer.werewolf.llmcalls import CallRecord, LLMPool, call_structured, call_text
from gtsteer.werewolf.playstyles import PLAYSTYLES, AssignedPlaystyle, PlaystyleChooser, reminder
from gtsteer.werewolf.rules import Role, derive_seed, rng
from gtsteer.werewolf.state import Decision, GameState, Pending, SummaryNotes

MAX_LINE_CHARS = 400


class NotesAnswer(BaseModel):
    """Compact notes schema (short fields keep the local model's answer within its budget)."""

    allies: str = Field(max_length=60)
    suspects: str = Field(max_length=60)
    role_knowledge: str = Field(max_length=60)
    social_threads: str = Field(max_length=60)
    plans: str = Field(max_length=60)


def target_model(name: str, legal: list[str], with_reason: bool = True) -> type[BaseModel]:
    """A schema whose `target` is an enum of exactly the legal names (grammar-enforced locally).

    The small local base model gets no `reason` field: its free text degenerates into
    repetition, costs most of the decision's tokens, and is never used by the engine."""
    fields: dict = {"target": (Literal[tuple(legal)], ...)}
    if with_reason:
        fields["reason"] = (str, Field(max_length=100))
    return create_model(name, **fields)  # type: ignore[call-overload]


def decision_seed(state: GameState, bot: str, purpose: str) -> int:
    return derive_seed(state.seed, state.step, state.day, bot, purpose)


def clean_line(text: str, bot: str, others: list[str] | None = None) -> str:
    """First line of a completion, without a repeated speaker label or stray quotes.

    A base model often goes on to write the next speaker's turn ("Elin: ..."); everything from
    another player's label on is dropped, so a bot never puts words in someone else's mouth."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    line = re.sub(rf"^{re.escape(bot)}\s*:\s*", "", line)
    for name in others or []:
        line = re.split(rf"(?:^|\s){re.escape(name)}\s*:", line, maxsplit=1)[0]
    return line.strip().strip('"').strip()[:MAX_LINE_CHARS]


def bot_decision(
    state: GameState, want: Pending, pool: LLMPool, chooser: PlaystyleChooser | None = None,
) -> tuple[Decision, list[CallRecord]]:
    bot = want.actor or ""
    me = state.player(bot)
    chooser = chooser or AssignedPlaystyle()
    draft = build_context(state, bot, want, me.playstyle)
    info = info_state(state, bot, want, draft.completion(""))
    style = chooser.choose(info)
    if style not in PLAYSTYLES:
        raise ValueError(f"PlaystyleChooser returned unknown playstyle {style!r}")
    # Only the reminder depends on the playstyle; the rest of the context is reused.
    ctx = draft if style == me.playstyle else draft.model_copy(
        update={"reminder": reminder(style, me.role is Role.WEREWOLF)}
    )
    local = pool.completion_style(me.model)
    seed = decision_seed(state, bot, want.kind)
    common = {"playstyle": style, "info_state": info.model_dump()}
    purpose = want.kind if want.verb is None else f"night:{want.verb}"

    if want.kind in ("speak", "pack_chat"):
        prompt = ctx.completion(f"{bot}:") if local else ctx.messages()
        raw, rec = call_text(pool, me.model, prompt, bot=bot, purpose=purpose, seed=seed,
                             max_tokens=48 if local else 80,
                             stop=["\n\n"] if local else None)
        others = [p.name for p in state.players if p.name != bot] + ["Moderator"]
        text = clean_line(raw, bot, others)
        return Decision(kind=want.kind, actor=bot, text=text, **common), [rec]

    if want.kind == "summary":
        prompt = ctx.completion("JSON:") if local else ctx.messages()
        value, rec = call_structured(pool, me.model, prompt, NotesAnswer, bot=bot,
                                     purpose="summary", seed=seed, max_tokens=220)
        if value is None:
            return Decision(kind="summary", actor=bot, notes=SummaryNotes(), fallback=True,
                            error=rec.error, **common), [rec]
        notes = SummaryNotes(**value.model_dump())
        return Decision(kind="summary", actor=bot, notes=notes, **common), [rec]

    legal = want.legal_targets
    schema = target_model("Vote" if want.kind == "vote" else "NightAction", legal,
                          with_reason=not local)
    prompt = ctx.completion("JSON:") if local else ctx.messages()
    value, rec = call_structured(pool, me.model, prompt, schema, bot=bot, purpose=purpose,
                                 seed=seed, max_tokens=100)
    if value is None or getattr(value, "target", None) not in legal:
        target = rng(state.seed, state.step, bot, "fallback").choice(legal)
        return Decision(kind=want.kind, actor=bot, target=target, reason="(fallback)",
                        fallback=True, error=rec.error or "target not legal", **common), [rec]
    return Decision(kind=want.kind, actor=bot, target=value.target,  # type: ignore[attr-defined]
                    reason=getattr(value, "reason", ""), **common), [rec]
