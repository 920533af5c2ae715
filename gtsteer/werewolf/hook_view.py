"""The playstyle hook's input, built from the `GameState` and what the bot may know.

Not from the prompt: the prompt opens with ~170 words of rules and ends with the assigned
style's reminder, so an embedder truncating at 256 word pieces would see the rules, and a
policy would learn the label. This view is compact and situation-first: role and decision,
the living and the dead (with revealed roles), every vote, the bot's private knowledge (pack,
investigations, protections, abductions, pack chat), its own past styles, the last chat lines.
The playstyle game (`steer_game`) shows players exactly this text, so what is solved and
distilled is what the live hook reads.
"""

from __future__ import annotations

from gtsteer.werewolf.playstyles import (
    STYLE_OPTIONS,
    HookInput,
    PastStyle,
    PlaystyleChooser,
    StyleChoice,
)
from gtsteer.werewolf.rules import Role, derive_seed
from gtsteer.werewolf.state import GameState, Pending

#: Chat lines kept in the view (the newest), and characters kept per line.
HOOK_CHAT_LINES = 8
HOOK_LINE_CHARS = 160
#: Own past styles kept in the text (all of them stay in `HookInput.past_styles`).
HOOK_PAST_STYLES = 6


def team_of(role: Role) -> str:
    return "werewolves" if role is Role.WEREWOLF else "village"


def decision_name(want: Pending) -> str:
    return want.kind if want.verb is None else f"{want.kind}:{want.verb}"


def style_seed(state: GameState, bot: str) -> int:
    """The seed of one style draw: a function of the game seed, the step and the bot."""
    return derive_seed(state.seed, state.step, bot, "style")


def own_past_styles(state: GameState, bot: str) -> list[PastStyle]:
    return [PastStyle(step=c.step, day=c.day, decision=c.decision, style=c.style)
            for c in state.style_history if c.bot == bot]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= HOOK_LINE_CHARS else text[: HOOK_LINE_CHARS - 3] + "..."


def _knowledge(state: GameState, bot: str) -> list[str]:
    """Private knowledge: what the bot did or saw at night, and its pack's chat."""
    me = state.player(bot)
    out: list[str] = []
    if me.role is Role.WEREWOLF:
        mates = [w for w in state.wolves() if w != bot]
        out.append(f"Pack: {', '.join(mates) or 'none (lone wolf)'}.")
    for a in state.night_actions:
        if bot in a.notified:  # told *that* it happened to them, never by whom
            out.append(f"Night {a.night}: you were abducted.")
        if bot not in a.observers or a.blocked or a.target is None:
            continue
        who = "you" if a.actor == bot else a.actor
        result = f" -> {a.result}" if a.result else ""
        out.append(f"Night {a.night}: {who} {a.verb} {a.target}{result}.")
    if me.role is Role.WEREWOLF:
        pack = [m for m in state.messages if m.channel == "pack"][-3:]
        out += [f"[pack] {m.author}: {_short(m.text)}" for m in pack]
    return out


def _votes(state: GameState) -> list[str]:
    out = []
    for d in range(1, state.day + 1):
        votes = [v for v in state.votes if v.day == d]
        if not votes:
            continue
        line = f"Day {d} votes: " + ", ".join(f"{v.voter}>{v.target}" for v in votes)
        result = next((r for r in state.day_results if r.day == d), None)
        if result is not None:
            line += (f"; {result.eliminated} out" if result.eliminated else "; tie, nobody out")
        out.append(line + ".")
    return out


def hook_text(state: GameState, bot: str, want: Pending, past: list[PastStyle]) -> str:
    me = state.player(bot)
    living = state.living()
    dead = [f"{p.name} ({p.role.value}, {p.cause or 'out'} day {p.died_day})"
            for p in state.players if not p.alive]
    mine_today = sum(1 for m in state.today_messages() if m.author == bot)
    against = sum(1 for v in state.votes if v.day == state.day and v.target == bot)
    lines = [
        (f"{me.role.value} ({team_of(me.role)}) deciding {decision_name(want)}, "
         f"day {state.day} {state.phase}. You are {bot}."),
        f"Living ({len(living)}): {', '.join(living)}.",
        f"Dead: {'; '.join(dead) or 'none'}.",
        *_votes(state),
        *_knowledge(state, bot),
        f"Today: you spoke {mine_today}x, {against} votes on you.",
        "Your past styles: " + (", ".join(f"d{p.day} {p.decision} {p.style}"
                                          for p in past[-HOOK_PAST_STYLES:]) or "none") + ".",
    ]
    chat = state.today_messages("public")[-HOOK_CHAT_LINES:]
    lines.append("Chat:" if chat else "Chat: none yet today.")
    lines += [f"{m.author}: {_short(m.text)}" for m in chat]
    return "\n".join(lines)


def hook_input(state: GameState, bot: str, want: Pending) -> HookInput:
    me = state.player(bot)
    past = own_past_styles(state, bot)
    return HookInput(
        bot=bot, role=me.role.value, team=team_of(me.role), model=me.model,
        game_id=state.game_id, step=state.step, day=state.day, phase=state.phase,
        decision=decision_name(want), seed=style_seed(state, bot),
        assigned_playstyle=me.playstyle, past_styles=past, living=state.living(),
        dead={p.name: p.role.value for p in state.players if not p.alive},
        legal_targets=list(want.legal_targets),
        pack=[w for w in state.wolves() if w != bot] if me.role is Role.WEREWOLF else [],
        text=hook_text(state, bot, want, past),
    )


def choose_style(
    state: GameState, bot: str, want: Pending, chooser: PlaystyleChooser
) -> tuple[HookInput, StyleChoice]:
    """Ask the chooser; validate its answer; stamp who, when and which seed."""
    info = hook_input(state, bot, want)
    answer = chooser.choose(info)
    choice = StyleChoice(style=answer, probs={answer: 1.0}) if isinstance(answer, str) else answer
    unknown = sorted({choice.style, *choice.probs} - set(STYLE_OPTIONS))
    if unknown:
        raise ValueError(f"PlaystyleChooser returned unknown playstyle {unknown[0]!r}; "
                         f"options: {list(STYLE_OPTIONS)}")
    if choice.probs.get(choice.style, 0.0) <= 0.0:
        raise ValueError(f"PlaystyleChooser drew {choice.style!r}, which has probability 0 in "
                         f"its distribution {choice.probs}")
    return info, choice.model_copy(update={"bot": bot, "step": state.step, "day": state.day,
                                           "decision": info.decision, "seed": info.seed})
