"""Per-bot context, rebuilt from the state for every decision, holding only what the bot knows.

Order (stable first, so consecutive prompts share a long prefix): system prompt, exact records
(votes, observed night events, own action table, own notes), today's chat flattened for this
bot (own lines as assistant turns, the rest folded into user blocks), then the command and the
playstyle reminder. The reminder is added at render time and never stored in the state.
"""

from __future__ import annotations

from pydantic import BaseModel

from gtsteer.llm import Message
from gtsteer.werewolf.playstyles import InfoState, reminder
from gtsteer.werewolf.prompts import (
    abduction_notice,
    action_line,
    night_command,
    pack_chat_command,
    speak_command,
    summary_command,
    system_prompt,
    vote_command,
)
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import GameState, NightAction, Pending

#: Today's chat lines kept in a prompt (the local model has a 4096-token context).
MAX_CHAT_LINES = 24
#: Own notes kept (the newest ones).
MAX_NOTES = 2


class Turn(BaseModel):
    author: str
    text: str


class BotContext(BaseModel):
    bot: str
    system: str
    records: str
    turns: list[Turn]
    command: str
    reminder: str = ""

    def messages(self) -> list[Message]:
        """Chat form: own lines are assistant turns, everything else folds into user blocks."""
        out = [Message(role="system", content=self.system)]
        block: list[str] = [self.records]
        for t in self.turns:
            if t.author == self.bot:
                out.append(Message(role="user", content="\n".join(block).strip() or "(go on)"))
                out.append(Message(role="assistant", content=t.text))
                block = []
            else:
                if not block or not any(b.startswith("Messages from") for b in block):
                    block.append("Messages from other players:")
                block.append(f"{t.author}: {t.text}")
        block += [self.command, self.reminder]
        out.append(Message(role="user", content="\n".join(b for b in block if b).strip()))
        return out

    def completion(self, answer_prefix: str) -> str:
        """Completion form for base models: a transcript the model continues."""
        chat = "\n".join(f"{t.author}: {t.text}" for t in self.turns) or "(no messages yet)"
        parts = [self.system, self.records, f"Today's chat:\n{chat}", self.command, self.reminder]
        return "\n\n".join(p for p in parts if p) + "\n" + answer_prefix


def visible_dead(state: GameState) -> list[str]:
    return [f"{p.name} ({p.role.value})" for p in state.players if not p.alive]


def pack_of(state: GameState, bot: str) -> list[str]:
    if state.player(bot).role is not Role.WEREWOLF:
        return []
    return [w for w in state.wolves() if w != bot]


def observed(action: NightAction, bot: str) -> bool:
    return bot in action.observers


def records_text(state: GameState, bot: str) -> str:
    me = state.player(bot)
    wolf = me.role is Role.WEREWOLF
    lines: list[str] = []
    for d in range(1, state.day + 1):
        day_votes = [v for v in state.votes if v.day == d]
        result = next((r for r in state.day_results if r.day == d), None)
        if day_votes and result is not None:
            lines.append(f"Day {d} votes, in order:")
            lines += [f"  {v.order}. {v.voter} -> {v.target}" for v in day_votes]
            if result.eliminated:
                lines.append(f"  Result: {result.eliminated} ({result.role.value}) "  # type: ignore[union-attr]
                             "eliminated.")
            else:
                lines.append("  Result: tie, nobody eliminated.")
        night = [a for a in state.night_actions if a.night == d]
        night_result = next((r for r in state.night_results if r.night == d), None)
        mine: list[str] = []
        if wolf:
            pack_lines = [m for m in state.messages if m.channel == "pack" and m.day == d]
            mine += [f"[pack] {m.author}: {m.text}" for m in pack_lines]
        for a in night:
            if a.verb == "abduct" and a.target == bot and not a.blocked:
                mine.append(abduction_notice(d, bot))
            if observed(a, bot):
                mine.append(action_line(a))
        if night_result is not None:
            mine.append(
                f"Night {d}: {night_result.killed} ({night_result.role.value}) was killed."  # type: ignore[union-attr]
                if night_result.killed else f"Night {d}: nobody died."
            )
        if mine:
            lines.append(f"Night {d} events you know:")
            lines += [f"  {m}" for m in mine]
    lines += _role_table(state, me.name, me.role)
    notes = [s for s in state.summaries if s.bot == bot][-MAX_NOTES:]
    for s in notes:
        n = s.notes
        lines.append(f"Your notes (day {s.day}): allies: {n.allies} | suspects: {n.suspects} | "
                     f"roles: {n.role_knowledge} | threads: {n.social_threads} | plans: {n.plans}")
    return "Records:\n" + "\n".join(lines) if lines else "Records: none yet (day 1)."


def _role_table(state: GameState, bot: str, role: Role) -> list[str]:
    mine = [a for a in state.night_actions if a.actor == bot and not a.blocked]
    if role is Role.DETECTIVE and mine:
        rows = [f"  night {a.night} | {a.target} | {a.result}" for a in mine]
        evil = sorted({a.target or "" for a in mine if a.result == "evil"})
        good = sorted({a.target or "" for a in mine if a.result == "good"})
        return ["Your investigations (night | player | result):", *rows,
                f"  Evil: {', '.join(evil) or 'none'}; good: {', '.join(good) or 'none'}."]
    if role is Role.DOCTOR and mine:
        return ["Your protections (night | player):",
                *[f"  night {a.night} | {a.target}" for a in mine]]
    if role is Role.MANIAC and mine:
        return ["Your abductions (night | player):",
                *[f"  night {a.night} | {a.target}" for a in mine]]
    return []


def today_turns(state: GameState) -> list[Turn]:
    turns = [Turn(author=m.author, text=m.text) for m in state.today_messages("public")]
    return turns[-MAX_CHAT_LINES:]


def command_for(state: GameState, bot: str, want: Pending) -> str:
    if want.kind == "summary":
        return summary_command(bot, state.day)
    if want.kind == "speak":
        return speak_command(bot, state.phase, state.day)
    if want.kind == "vote":
        so_far = [f"  {v.order}. {v.voter} -> {v.target}" for v in state.votes
                  if v.day == state.day]
        return vote_command(bot, state.day, so_far, want.legal_targets)
    pack_lines = [f"[pack] {m.author}: {m.text}" for m in state.messages
                  if m.channel == "pack" and m.day == state.day]
    if want.kind == "pack_chat":
        return pack_chat_command(bot, state.day, pack_of(state, bot) or [bot], pack_lines)
    extra = ""
    if want.verb == "kill" and pack_lines:
        extra = "Tonight's pack chat:\n" + "\n".join(pack_lines)
    return night_command(bot, want.verb or "", state.day, want.legal_targets, extra)


def build_context(state: GameState, bot: str, want: Pending, playstyle: str) -> BotContext:
    me = state.player(bot)
    living = state.living()
    return BotContext(
        bot=bot,
        system=system_prompt(bot, me.story, me.role, pack_of(state, bot), living,
                             visible_dead(state), state.scene),
        records=records_text(state, bot),
        turns=today_turns(state),
        command=command_for(state, bot, want),
        reminder=reminder(playstyle, me.role is Role.WEREWOLF),
    )


def info_state(state: GameState, bot: str, want: Pending, text: str) -> InfoState:
    me = state.player(bot)
    return InfoState(
        bot=bot,
        role=me.role.value,
        team="werewolves" if me.role is Role.WEREWOLF else "village",
        assigned_playstyle=me.playstyle,
        day=state.day,
        phase=state.phase,
        decision=want.kind if want.verb is None else f"{want.kind}:{want.verb}",
        living=state.living(),
        dead={p.name: p.role.value for p in state.players if not p.alive},
        legal_targets=want.legal_targets,
        pack=pack_of(state, bot),
        votes_against_me_today=sum(1 for v in state.votes
                                   if v.day == state.day and v.target == bot),
        messages_today=sum(1 for m in state.today_messages() if m.author == bot),
        text=text,
    )


def public_chat_lines(state: GameState) -> list[str]:
    """The router's view: today's public chat, nothing else."""
    return [f"{m.author}: {m.text}" for m in state.today_messages("public")]
