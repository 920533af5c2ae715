"""Bot decisions: build the bot's context, ask its model, validate, fall back if it never works.

Votes and night actions take two calls: a one-sentence reason (the decision's `reason`), then
every option scored after it (`choose`) and one sampled with the decision seed. A choice that
never validates becomes a seeded random option with `fallback=True`, a failed summary empty
notes; the game goes on (docs/WEREWOLF.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, create_model

from gtsteer.llm import ChoiceResult, Message
from gtsteer.llm.speech import drop_stage_directions, ends_sentence, whole_sentences
from gtsteer.werewolf.context import BotContext, build_context, choice_options, fit_context
from gtsteer.werewolf.echoes import EchoFilter, private_texts, shared_prompt_texts
from gtsteer.werewolf.hook_view import choose_style
from gtsteer.werewolf.llmcalls import CallRecord, LLMPool, call_choice, call_structured, call_text
from gtsteer.werewolf.playstyles import UNSTEERED, AssignedPlaystyle, PlaystyleChooser, reminder
from gtsteer.werewolf.prompts import pick_prompt
from gtsteer.werewolf.rules import Role, derive_seed, rng
from gtsteer.werewolf.state import (
    MODERATOR,
    Decision,
    GameState,
    Pending,
    Player,
    SummaryNotes,
)

MAX_LINE_CHARS = 600


def human_line(text: str) -> str:
    """A human's chat line as the table stores it (one line, at most MAX_LINE_CHARS printable
    characters), or a ValueError saying which rule it breaks; the web app's `schemas.Act`
    agrees."""
    if len(text) > MAX_LINE_CHARS:
        raise ValueError(f"at most {MAX_LINE_CHARS} characters, got {len(text)}")
    line = " ".join(text.split())
    if any(not ch.isprintable() for ch in line):
        raise ValueError("the line has control or unprintable characters (escapes, bells)")
    return line
#: Token budget of a public line for an embedded model (three times this for API models).
SPEAK_TOKENS = 60
#: Notes field lengths: short for the small local model (its grammar stops it there), roomy
#: for chat models (a limit they overrun means a retry, then empty notes).
NOTES_CHARS_LOCAL, NOTES_CHARS_CHAT = 120, 600
#: Extra samples a line gets when it comes out empty, repeats its channel word for word, or
#: ends mid-sentence: a sampling accident, not a move (SmolLM2 left 2 of 13 lines empty in the
#: seed-0 game, docs/BENCHMARKS.md). Each extra sample is a recorded call.
LINE_RESAMPLES = 2
#: Context tokens kept free beyond an answer's own budget (a scored option's tokens, the
#: chat template's closing tokens).
ANSWER_MARGIN = 32


def token_budget(max_tokens: int, small: bool) -> int:
    return max_tokens if small else 3 * max_tokens


def notes_model(small: bool) -> type[BaseModel]:
    limit = NOTES_CHARS_LOCAL if small else NOTES_CHARS_CHAT
    fields = {k: (str, Field(max_length=limit)) for k in SummaryNotes.model_fields}
    return create_model("Notes", **fields)  # type: ignore[call-overload]


def decision_seed(state: GameState, bot: str, purpose: str) -> int:
    return derive_seed(state.seed, state.step, state.day, bot, purpose)


def clean_line(text: str, bot: str, others: list[str] | None = None,
               first_line: bool = True) -> str:
    """A completion without a repeated speaker label, stray quotes, stage directions, or the
    next speaker's turn a base model goes on to write (a bot never puts words in someone
    else's mouth). Base models keep their first line; chat models' paragraphs are joined."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = (lines[0] if lines else "") if first_line else " ".join(lines)
    line = re.sub(rf"^(\[pack\]\s*)?{re.escape(bot)}\s*:\s*", "", line)
    for name in others or []:
        line = re.split(rf"(?:^|\s)(?:\[pack\]\s*)?{re.escape(name)}\s*:", line, maxsplit=1)[0]
    return drop_stage_directions(line.strip().strip('"').strip())[:MAX_LINE_CHARS]


def line_key(text: str) -> str:
    """A line's words, case and spacing aside: two lines with one key repeat each other."""
    return " ".join(text.lower().split())


def line_rank(text: str, heard: set[str]) -> int:
    """How good a try at a line is: 3 fresh and whole, 2 fresh but ending mid-sentence, 1 a
    repeat of a line of its channel (`heard`, by `line_key`), 0 empty."""
    if not text:
        return 0
    if line_key(text) in heard:
        return 1
    return 3 if ends_sentence(text) else 2


def sample_choice(result: ChoiceResult, options: list[str], seed: int) -> str:
    """Sample from the softmax of the option scores (a constrained pick is taken as is)."""
    if result.method == "constrained":
        return result.choice
    top = max(result.scores[o] for o in options)
    weights = [math.exp(result.scores[o] - top) for o in options]
    return rng(seed, "pick").choices(options, weights=weights)[0]


def parse_option(option: str, want: Pending) -> tuple[str | None, str]:
    """(action, target) from an option string ("kill Ann" when several actions are offered)."""
    if want.kind == "night" and len(want.actions) > 1:
        action, target = option.split(" ", 1)
        return action, target
    return None, option


@dataclass(frozen=True)
class DecisionContext:
    """What every kind of bot decision shares."""

    state: GameState
    want: Pending
    pool: LLMPool
    me: Player
    #: The bot's context with this decision's style sentence (none when unsteered).
    ctx: BotContext
    #: Transcript form (an embedded base model) and short answers (any embedded model).
    local: bool
    small: bool
    seed: int
    #: The playstyle followed, the hook's information state and its choice.
    common: dict[str, Any]
    #: The purpose recorded with the decision's calls (`night:<verb>` for a night slot).
    purpose: str

    @property
    def bot(self) -> str:
        return self.me.name

    @property
    def others(self) -> list[str]:
        return [p.name for p in self.state.players if p.name != self.bot] + [MODERATOR]

    def fitted(self, context: BotContext, answer_prefix: str, answer_tokens: int
               ) -> tuple[BotContext, str | list[Message]]:
        """The context guard: room for the answer in the model's context."""
        local = self.local

        def render(c: BotContext) -> str | list[Message]:
            return c.completion(answer_prefix) if local else c.messages()

        names = [p.name for p in self.state.players]
        return fit_context(context, names, render,
                           lambda p: self.pool.fits(self.me.model, p,
                                                    answer_tokens + ANSWER_MARGIN))

    def say(self, context: BotContext, label: str, why: str, max_tokens: int,
            call_seed: int | None = None) -> tuple[str, CallRecord, BotContext]:
        """One free-text line, cleaned, and cut to whole sentences if it hit its budget."""
        max_tokens = token_budget(max_tokens, self.small)
        context, prompt = self.fitted(context, f"{label}:", max_tokens)
        # An embedded chat model may go on to write the others' turns: it stops there (the
        # tokens after are only time). A `Name:` cue, as the dialogue games use, made SmolLM2
        # and Qwen 0.5B copy the day's earlier lines (docs/WEREWOLF.md).
        others = self.others
        turn_stops = [f"\n{name}:" for name in others] if self.small and not self.local else None
        raw, rec = call_text(self.pool, self.me.model, prompt, bot=self.bot, purpose=why,
                             seed=self.seed if call_seed is None else call_seed,
                             max_tokens=max_tokens, stop=["\n\n"] if self.local else turn_stops)
        rec.day = self.state.day
        line = clean_line(raw, self.bot, others, first_line=self.small)
        if rec.completion_tokens >= max_tokens:  # ran into the limit: no unfinished sentence
            line = whole_sentences(line)
        return line, rec, context


def decision_context(state: GameState, want: Pending, pool: LLMPool,
                     chooser: PlaystyleChooser | None = None) -> DecisionContext:
    me = state.player(want.actor or "")
    draft = build_context(state, me.name, want, me.playstyle)
    # The hook never reads the prompt.
    info, choice = choose_style(state, me.name, want, chooser or AssignedPlaystyle())
    style = choice.style
    # Only the style sentence depends on the playstyle (none at all when unsteered).
    ctx = draft.model_copy(update={"style": "" if style == UNSTEERED
                                   else reminder(style, me.role is Role.WEREWOLF)})
    return DecisionContext(
        state=state, want=want, pool=pool, me=me, ctx=ctx,
        local=pool.completion_style(me.model), small=pool.small(me.model),
        seed=decision_seed(state, me.name, want.kind),
        common={"playstyle": style, "info_state": info.model_dump(), "style_choice": choice},
        purpose=want.kind if want.verb is None else f"night:{want.verb}",
    )


def bot_decision(
    state: GameState, want: Pending, pool: LLMPool, chooser: PlaystyleChooser | None = None,
) -> tuple[Decision, list[CallRecord]]:
    """The bot's answer to `want`: a chat line, its notes, or a target."""
    dc = decision_context(state, want, pool, chooser)
    if want.kind in ("speak", "pack_chat"):
        return _speak(dc)
    if want.kind == "summary":
        return _summarise(dc)
    return _choose(dc)


def _speak(dc: DecisionContext) -> tuple[Decision, list[CallRecord]]:
    """A public or pack line, resampled while it comes out empty, repeated or cut; a public
    line has its prompt's private text stripped."""
    state, want, bot = dc.state, dc.want, dc.bot
    label = bot if want.kind == "speak" else f"[pack] {bot}"
    channel = "public" if want.kind == "speak" else "pack"
    heard = {line_key(m.text) for m in state.messages if m.channel == channel}
    echo_filter = (EchoFilter([*private_texts(state, bot, dc.ctx.command, dc.ctx.style),
                               *shared_prompt_texts(state.config)],
                              wolf=dc.me.role is Role.WEREWOLF, speaker=bot)
                   if want.kind == "speak" else None)
    tries: list[tuple[int, str, int, BotContext]] = []  # (line_rank, text, echoes, ...)
    records: list[CallRecord] = []
    for attempt in range(1 + LINE_RESAMPLES):
        text, rec, used = dc.say(dc.ctx, label, dc.purpose, SPEAK_TOKENS,
                                 None if attempt == 0 else derive_seed(dc.seed, "resample",
                                                                       attempt))
        records.append(rec)
        echoes = 0
        if echo_filter is not None:  # a public line must not read out its prompt
            text, echoes = echo_filter.strip(text)
        tries.append((line_rank(text, heard), text, echoes, used))
        if tries[-1][0] == 3:
            break
    # The best try, the earliest of equals (max keeps the first): a cut fresh line beats a
    # repeat, a repeat beats silence; all empty: the last try.
    best = max(tries, key=lambda t: t[0])
    _, text, echoes, used = best if best[0] else tries[-1]
    return Decision(kind=want.kind, actor=bot, text=text, folded=used.folded,
                    echoes=echoes, resampled=len(tries) - 1,
                    first_try=tries[0][1] if len(tries) > 1 else None, **dc.common), records


def _summarise(dc: DecisionContext) -> tuple[Decision, list[CallRecord]]:
    budget = 300 if dc.small else 900
    used, prompt = dc.fitted(dc.ctx, "JSON:", budget)
    value, rec = call_structured(dc.pool, dc.me.model, prompt, notes_model(dc.small),
                                 bot=dc.bot, purpose="summary", seed=dc.seed, max_tokens=budget)
    rec.day = dc.state.day
    if value is None:
        return Decision(kind="summary", actor=dc.bot, notes=SummaryNotes(), fallback=True,
                        error=rec.error, folded=used.folded, **dc.common), [rec]
    notes = SummaryNotes(**value.model_dump())
    return Decision(kind="summary", actor=dc.bot, notes=notes, folded=used.folded,
                    **dc.common), [rec]


def _choose(dc: DecisionContext) -> tuple[Decision, list[CallRecord]]:
    state, want, bot = dc.state, dc.want, dc.bot
    options = choice_options(state, bot, want)
    reason, said, used = dc.say(dc.ctx, bot, f"{dc.purpose}:reason", 48)
    if len(options) == 1:
        action, target = parse_option(options[0], want)
        return Decision(kind=want.kind, actor=bot, target=target, action=action, reason=reason,
                        folded=used.folded, **dc.common), [said]
    pick = used.with_answer(bot, reason or "(no comment)", "")
    if not dc.local:
        pick = pick.model_copy(update={"command": f"{pick_prompt(bot)} Options: "
                                       f"{', '.join(options)}."})
    pick, prompt = dc.fitted(pick, pick_prompt(bot), 0)
    result, rec = call_choice(dc.pool, dc.me.model, prompt, options, bot=bot,
                              purpose=dc.purpose, seed=dc.seed)
    rec.day = state.day
    if result is None or result.choice not in options:
        option = rng(state.seed, state.step, bot, "fallback").choice(options)
        action, target = parse_option(option, want)
        return Decision(kind=want.kind, actor=bot, target=target, action=action, reason=reason,
                        fallback=True, error=rec.error or "choice not legal", folded=pick.folded,
                        **dc.common), [said, rec]
    action, target = parse_option(sample_choice(result, options, dc.seed), want)
    return Decision(kind=want.kind, actor=bot, target=target, action=action, reason=reason,
                    folded=pick.folded, **dc.common), [said, rec]
