"""The playstyle hook's input, built from the `GameState` and what the bot may know.

Not from the prompt, which opens with ~170 words of rules and ends with the assigned style's
reminder: an embedder truncating at 256 word pieces would see the rules, and a policy would
learn the label. The playstyle game shows its players exactly this view, so what is solved and
distilled is what the live hook reads.
"""

from __future__ import annotations

from gtsteer.werewolf.playstyles import (
    HookInput,
    PastStyle,
    PlaystyleChooser,
    StyleChoice,
    options_for,
)
from gtsteer.werewolf.roles import ROLES
from gtsteer.werewolf.rules import Role, derive_seed
from gtsteer.werewolf.state import GameState, Pending
from gtsteer.werewolf.visibility import (
    action_audience,
    bot_viewer,
    message_audience,
    notice_audience,
    pack_audience,
)

#: Chat lines kept in the view (the newest), and characters kept per line.
HOOK_CHAT_LINES = 8
HOOK_LINE_CHARS = 160
#: Own past styles kept in the text (all of them stay in `HookInput.past_styles`).
HOOK_PAST_STYLES = 6


def team_of(role: Role) -> str:
    return ROLES[role].team


def decision_name(want: Pending) -> str:
    return want.kind if want.verb is None else f"{want.kind}:{want.verb}"


def style_seed(state: GameState, bot: str) -> int:
    return derive_seed(state.seed, state.step, bot, "style")


def own_past_styles(state: GameState, bot: str) -> list[PastStyle]:
    return [PastStyle(step=c.step, day=c.day, decision=c.decision, style=c.style)
            for c in state.style_history if c.bot == bot]


def turns_left_today(want: Pending) -> int | None:
    if want.kind != "speak" or want.turn is None or want.turns_total is None:
        return None
    return want.turns_total - want.turn + 1


def votes_today(state: GameState) -> list[str]:
    return [f"{v.voter}>{v.target}" for v in state.votes if v.day == state.day]


def vote_position(state: GameState, want: Pending) -> int | None:
    return len(votes_today(state)) if want.kind == "vote" else None


def _pace(state: GameState, want: Pending) -> list[str]:
    left, position = turns_left_today(want), vote_position(state, want)
    if left is not None:
        return [f"Turns left today: {left}, this one included."]
    if position is not None:
        return [f"Votes cast before yours today: {position}."]
    return []


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= HOOK_LINE_CHARS else text[: HOOK_LINE_CHARS - 3] + "..."


def _knowledge(state: GameState, bot: str) -> list[str]:
    """Private knowledge: what the bot did or saw at night, and its pack's chat."""
    me = bot_viewer(bot)
    wolf = me.sees(pack_audience(state))
    out: list[str] = []
    if wolf:
        mates = [w for w in pack_audience(state) if w != bot]
        out.append(f"Pack: {', '.join(mates) or 'none (lone wolf)'}.")
    for a in state.night_actions:
        if me.sees(notice_audience(a)):  # told *that* it happened to them, never by whom
            out.append(f"Night {a.night}: you were abducted.")
        if not me.sees(action_audience(a)) or a.blocked or a.target is None:
            continue
        who = "you" if a.actor == bot else a.actor
        result = f" -> {a.result}" if a.result else ""
        out.append(f"Night {a.night}: {who} {a.verb} {a.target}{result}.")
    if wolf:
        pack = [m for m in state.messages
                if m.channel == "pack" and me.sees(message_audience(state, m))][-3:]
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
        *_pace(state, want),
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
        assigned_playstyle=me.playstyle, options=list(options_for(want.kind)),
        turns_left_today=turns_left_today(want), vote_position=vote_position(state, want),
        votes_today=votes_today(state), past_styles=past, living=state.living(),
        dead={p.name: p.role.value for p in state.players if not p.alive},
        legal_targets=list(want.legal_targets),
        pack=[w for w in state.wolves() if w != bot] if me.role is Role.WEREWOLF else [],
        text=hook_text(state, bot, want, past),
    )


def choose_style(
    state: GameState, bot: str, want: Pending, chooser: PlaystyleChooser
) -> tuple[HookInput, StyleChoice]:
    """Ask the chooser (not at a one-option decision), validate its answer, stamp who, when
    and which seed."""
    info = hook_input(state, bot, want)
    if len(info.options) == 1:
        only = info.options[0]
        choice = StyleChoice(style=only, probs={only: 1.0})
    else:
        answer = chooser.choose(info)
        choice = (StyleChoice(style=answer, probs={answer: 1.0}) if isinstance(answer, str)
                  else answer)
        check_answer(info, choice)
    return info, choice.model_copy(update={"bot": bot, "step": state.step, "day": state.day,
                                           "decision": info.decision, "seed": info.seed})


def check_answer(info: HookInput, choice: StyleChoice) -> None:
    where = f"{info.bot}'s {info.decision} decision at step {info.step}"
    illegal = [n for n in dict.fromkeys([choice.style, *choice.probs]) if n not in info.options]
    if illegal:
        raise ValueError(f"PlaystyleChooser answered {illegal[0]!r} for {where}, which is not "
                         f"an allowed option; allowed options: {info.options}")
    if choice.probs.get(choice.style, 0.0) <= 0.0:
        raise ValueError(f"PlaystyleChooser drew {choice.style!r} for {where}, which has "
                         f"probability 0 in its distribution {choice.probs}")
