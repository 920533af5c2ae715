"""Per-bot context, rebuilt from the state for every decision, holding only what the bot knows.

Built for prompt caching (docs/WEREWOLF.md, "Prompt layout"): a static system prompt per bot,
then an append-only chronological log (past days as moderator recaps with the bot's own night
events and notes, today in full), then the command and the playstyle sentence, the only parts
that change between calls. A sentence reaches a bot only through `visibility`'s check on the
state, never through its wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from gtsteer.llm import Message
from gtsteer.werewolf.playstyles import reminder
from gtsteer.werewolf.prompts import (
    abduction_notice,
    action_line,
    day_header,
    intro_command,
    night_command,
    pack_chat_command,
    speak_command,
    summary_command,
    system_prompt,
    vote_command,
    vote_line,
)
from gtsteer.werewolf.roles import ROLES
from gtsteer.werewolf.rules import Role, derive_seed, rng
from gtsteer.werewolf.state import MODERATOR, ChatMessage, GameState, NightAction, Pending
from gtsteer.werewolf.visibility import (
    action_audience,
    bot_viewer,
    message_audience,
    notice_audience,
    pack_audience,
)

#: Today's discussion lines kept before trimming (the local model has a 4096-token context).
MAX_CHAT_LINES = 48
#: Lines are dropped in blocks of this size, so the cut point (and the prefix) moves rarely.
TRIM_BLOCK = 24
#: The context guard folds chat lines in blocks of this size (same reason).
FOLD_BLOCK = 8


class Entry(BaseModel):
    """One line of a bot's log: `own` answers are assistant turns in chat form; an `author`
    marks a chat line (or the command asking for one), which the context guard may fold."""

    label: str = ""
    text: str
    own: bool = False
    author: str | None = None

    def line(self) -> str:
        return f"{self.label}: {self.text}" if self.label else self.text


class BotContext(BaseModel):
    bot: str
    system: str
    log: list[Entry]
    command: str
    style: str = ""
    #: Chat lines the context guard folded into a summary line to fit the model's context.
    folded: int = 0

    def messages(self) -> list[Message]:
        """Chat form: own answers are assistant turns, everything else folds into user blocks."""
        out = [Message(role="system", content=self.system)]
        block: list[str] = []
        for e in self.log:
            if e.own:
                out.append(Message(role="user", content="\n".join(block) or "(go on)"))
                out.append(Message(role="assistant", content=e.text))
                block = []
            else:
                block.append(e.line())
        block += [self.command, self.style]
        out.append(Message(role="user", content="\n".join(b for b in block if b)))
        return out

    def completion(self, answer_prefix: str) -> str:
        """Completion form for base models: a transcript the model continues."""
        lines = [e.line() for e in self.log] + [self.command, self.style]
        return self.system + "\n\n" + "\n".join(b for b in lines if b) + "\n" + answer_prefix

    def with_answer(self, label: str, text: str, follow_up: str) -> BotContext:
        """This context after the bot answered, with a follow-up command (reason -> pick)."""
        log = [*self.log, Entry(text=self.command), Entry(label=label, text=text, own=True)]
        return self.model_copy(update={"log": log, "command": follow_up, "style": ""})


def pack_of(state: GameState, bot: str) -> list[str]:
    if state.player(bot).role is not Role.WEREWOLF:
        return []
    return [w for w in state.wolves(alive_only=True) if w != bot]


def knows_action(action: NightAction, bot: str) -> bool:
    return bot_viewer(bot).sees(action_audience(action))


def night_entries(state: GameState, bot: str, night: int, commands: bool = True) -> list[Entry]:
    """The night's events this bot may know, in order (with the commands asking for its pack
    lines while that night is the current one)."""
    me = bot_viewer(bot)
    wolf = me.sees(pack_audience(state))
    actions = [a for a in state.night_actions if a.night == night]
    out: list[Entry] = []
    notified = any(me.sees(notice_audience(a)) for a in actions)
    for a in actions:
        if a.verb == "abduct":
            if knows_action(a, bot):
                out.append(Entry(text=action_line(a)))
            if me.sees(notice_audience(a)):
                out.append(Entry(text=abduction_notice(night, bot)))
    if wolf:
        mates = [w for w in state.alive_at_night(night)
                 if state.player(w).role is Role.WEREWOLF and w != bot]
        for m in state.messages:
            if m.channel == "pack" and m.day == night and me.sees(message_audience(state, m)):
                own = commands and m.author == bot
                if own:
                    out.append(Entry(text=pack_chat_command(bot, night, mates or [bot]),
                                     author=bot))
                out.append(Entry(label=f"[pack] {m.author}", text=m.text, own=own,
                                 author=m.author))
    for a in actions:
        if a.verb == "abduct" or not knows_action(a, bot):
            continue
        if a.blocked and notified:
            continue  # the abduction notice already says the action was blocked
        out.append(Entry(text=action_line(a)))
    return out


def day_recap(state: GameState, day: int) -> str:
    """The moderator's neutral recap of a finished day and night: public facts only."""
    said: dict[str, int] = {}
    for m in state.messages:
        if m.day == day and m.channel == "public" and m.phase == "discussion":
            said[m.author] = said.get(m.author, 0) + 1
    talk = ", ".join(f"{n} {c}" for n, c in said.items()) or "nobody spoke"
    votes = "; ".join(f"{v.voter} -> {v.target}" for v in state.votes if v.day == day)
    ends = [m.text for m in state.messages if m.day == day and m.channel == "public"
            and m.author == MODERATOR]
    parts = [f"Day {day} recap (moderator): messages per player: {talk}."]
    if votes:
        parts.append(f"Votes in order: {votes}.")
    parts += ends
    return " ".join(parts)


def notes_line(state: GameState, bot: str, day: int) -> Entry | None:
    s = next((s for s in state.summaries if s.bot == bot and s.day == day), None)
    if s is None:
        return None
    n = s.notes
    return Entry(text=f"Your notes after day {day}: allies: {n.allies} | suspects: "
                 f"{n.suspects} | roles: {n.role_knowledge} | threads: {n.social_threads} | "
                 f"plans: {n.plans}")


def investigations(state: GameState, bot: str, before_day: int) -> str:
    """The detective's table with its conclusions, as of the start of `before_day`."""
    mine = [a for a in state.night_actions if a.actor == bot and a.verb == "investigate"
            and a.night < before_day and a.result]
    if not mine:
        return ""
    evil = sorted({a.target or "" for a in mine if a.result == "evil"})
    good = sorted({a.target or "" for a in mine if a.result == "good"})
    evil_roles = " or ".join(s.name for s in ROLES.values() if s.reads_evil)
    return (f"Your investigations: evil ({evil_roles}): {', '.join(evil) or 'none'}; "
            f"good: {', '.join(good) or 'none'}.")


def trimmed(lines: list[ChatMessage]) -> tuple[list[ChatMessage], bool]:
    """Drop the oldest lines in whole blocks once a day outgrows MAX_CHAT_LINES."""
    if len(lines) <= MAX_CHAT_LINES:
        return lines, False
    start = ((len(lines) - MAX_CHAT_LINES) // TRIM_BLOCK + 1) * TRIM_BLOCK
    return lines[start:], True


def day_entries(state: GameState, bot: str, day: int) -> list[Entry]:
    extra = investigations(state, bot, day)  # "" for all but a role that investigates
    alive = display_order(state, "", state.alive_on(day), "alive")  # no name always first
    out = [Entry(label=MODERATOR, text=day_header(day, alive, extra))]
    public = [m for m in state.messages if m.day == day and m.channel == "public"]
    chat, cut = trimmed([m for m in public if m.phase in ("intro", "discussion")])
    if cut:
        out.append(Entry(text="(earlier messages of today are omitted)"))
    total = state.turn_limit(day)
    for m in chat:
        if m.author == bot:
            out.append(Entry(text=intro_command(bot) if m.turn is None
                             else speak_command(bot, day, m.turn, total), author=bot))
        out.append(Entry(label=m.author, text=m.text, own=m.author == bot, author=m.author))
    out += [Entry(text=vote_line(v)) for v in state.votes if v.day == day]
    out += [Entry(label=MODERATOR, text=m.text) for m in public if m.phase == "vote"]
    out += night_entries(state, bot, day)
    out += [Entry(label=MODERATOR, text=m.text) for m in public
            if m.phase in ("night", "summary", "over")]
    return out


P = TypeVar("P")


def fold_chat(ctx: BotContext, names: list[str], lines: int) -> BotContext:
    """The context with its oldest `lines` chat lines folded into one summary line per run
    (who spoke how often, whom they named); the rest stays in place, in order."""
    log: list[Entry] = []
    run: list[Entry] = []
    left = lines

    def close_run() -> None:
        if run:
            log.append(Entry(text=fold_line(ctx.bot, run, names)))
            run.clear()

    for e in ctx.log:
        if e.author is not None and left > 0:
            run.append(e)  # a command comes right before the line it asked for
            left -= bool(e.label)
            continue
        close_run()
        log.append(e)
    close_run()
    return ctx.model_copy(update={"log": log, "folded": ctx.folded + lines - max(left, 0)})


def fold_line(bot: str, run: list[Entry], names: list[str]) -> str:
    said: dict[str, int] = {}
    named: dict[str, list[str]] = {}
    for e in run:
        if not e.label or e.author is None:
            continue
        who = "you" if e.author == bot else e.author
        said[who] = said.get(who, 0) + 1
        mentioned = named.setdefault(who, [])
        words = set(re.findall(r"[A-Za-z0-9]+", e.text))
        mentioned += [n for n in names if n in words and n != e.author and n not in mentioned]
    parts = [f"{who} {k}" + (f" (named {', '.join(named[who])})" if named[who] else "")
             for who, k in said.items()]
    return (f"(Summary of {sum(said.values())} earlier chat lines, folded to fit your memory: "
            f"{'; '.join(parts)}.)")


def chat_lines(ctx: BotContext) -> int:
    return sum(1 for e in ctx.log if e.author is not None and e.label)


def fit_context(ctx: BotContext, names: list[str], render: Callable[[BotContext], P],
                fits: Callable[[P], bool]) -> tuple[BotContext, P]:
    """The context guard: the oldest chat folded in blocks of FOLD_BLOCK lines until the
    rendered prompt `fits` (or all is folded: the model call then says why)."""
    best, prompt = ctx, render(ctx)
    total, lines = chat_lines(ctx), 0
    while not fits(prompt) and lines < total:
        lines = min(total, lines + FOLD_BLOCK)
        best = fold_chat(ctx, names, lines)
        prompt = render(best)
    return best, prompt


def log_entries(state: GameState, bot: str) -> list[Entry]:
    out: list[Entry] = []
    for d in range(1, state.day):
        out.append(Entry(text=day_recap(state, d)))
        out += night_entries(state, bot, d, commands=False)
        notes = notes_line(state, bot, d)
        if notes is not None:
            out.append(notes)
    return out + day_entries(state, bot, state.day)


def display_order(state: GameState, bot: str, options: list[str], purpose: str) -> list[str]:
    """The options sorted, then shuffled with a seed of (game, day, bot, purpose): any order of
    the input gives one prompt, and no player is systematically listed first."""
    shown = sorted(options)
    rng(derive_seed(state.seed, state.day, bot, purpose, "order")).shuffle(shown)
    return shown


def choice_options(state: GameState, bot: str, want: Pending) -> list[str]:
    """What the bot picks from: names (votes, one-action nights) or "action name" strings."""
    if want.kind == "vote":
        return display_order(state, bot, want.legal_targets, "vote")
    if want.kind != "night":
        return []
    actions = want.actions or {want.verb or "": want.legal_targets}
    if len(actions) == 1:
        (targets,) = actions.values()
        return display_order(state, bot, targets, f"night:{want.verb}")
    combos = [f"{a} {t}" for a, targets in actions.items() for t in targets]
    return display_order(state, bot, combos, f"night:{want.verb}")


def command_for(state: GameState, bot: str, want: Pending) -> str:
    if want.kind == "summary":
        return summary_command(bot, state.day)
    if want.kind == "speak":
        if state.phase == "intro":
            return intro_command(bot)
        return speak_command(bot, state.day, want.turn or state.turns_today + 1,
                             want.turns_total or state.turn_limit())
    if want.kind == "vote":
        return vote_command(bot, state.day)
    if want.kind == "pack_chat":
        return pack_chat_command(bot, state.day, pack_of(state, bot) or [bot])
    actions = want.actions or {want.verb or "": want.legal_targets}
    return night_command(bot, state.day, actions, choice_options(state, bot, want))


def build_context(state: GameState, bot: str, want: Pending, playstyle: str) -> BotContext:
    me = state.player(bot)
    pack = pack_audience(state)
    return BotContext(
        bot=bot,
        system=system_prompt(bot, me.story, me.role, pack if bot_viewer(bot).sees(pack) else [],
                             state.scene, state.config.rules, state.config.ties),
        log=log_entries(state, bot),
        command=command_for(state, bot, want),
        style=reminder(playstyle, me.role is Role.WEREWOLF),
    )


def public_chat_lines(state: GameState) -> list[str]:
    """The router's view: today's public chat, nothing else."""
    return [f"{m.author}: {m.text}" for m in state.today_messages("public")]
