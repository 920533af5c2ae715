"""Six playstyles (one description per side) and the hook that picks one at every decision.

The hook is where a trained policy plugs in: `PlaystyleChooser.choose(info)` sees a compact
`HookInput` (never the rules or a reminder; see `hook_view`) and returns a distribution over
the decision's options and the style drawn from it. Both are stored with the decision, so logs
double as training data.
"""

from __future__ import annotations

import random
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

PLAYSTYLES: dict[str, dict[str, str]] = {
    "aggressive_provoker": {
        "village": "Press hard. Name a suspect early, demand answers, and watch who rushes to "
        "defend them or goes quiet; pressure makes wolves slip.",
        "wolf": "Attack first so nobody attacks you. Pick a loud villager, push a sharp case "
        "against them, and keep the room busy reacting to you.",
    },
    "protective_team_player": {
        "village": "Shield players the room is piling on without evidence. Ask why nobody "
        "defends the target; a fast, unanimous push is how wolves lynch villagers.",
        "wolf": "Be the village's reasonable friend. Defend a few villagers to earn trust and "
        "steer quietly away from your pack mates without ever defending them openly.",
    },
    "trickster": {
        "village": "Bait reactions: float odd theories, hint at information you may not have, "
        "and see who takes the bait or tries to use it.",
        "wolf": "Sow confusion. Mix a true detail with a false one, hint at a role you do not "
        "have, and let villagers suspect each other.",
    },
    "rule_breaker": {
        "village": "Break the usual patterns: vote against the flow when the case is thin, "
        "push for role claims, and shake the table when it settles too fast.",
        "wolf": "Do the unexpected: claim a role boldly, vote against a pack mate if it buys "
        "trust, and make the village's habits work against it.",
    },
    "quiet_observer": {
        "village": "Speak little and precisely. Track who voted when and who changed their "
        "story; speak up with one concrete point when it matters.",
        "wolf": "Stay low. Agree with moderate points, never lead a push, and vote with the "
        "majority late so your vote hides in the crowd.",
    },
    "balanced": {
        "village": "Weigh the evidence: votes, contradictions, claims. Share reads with their "
        "reasons and change your mind openly when facts change.",
        "wolf": "Play like a thoughtful villager: give measured reads, admit uncertainty, and "
        "nudge suspicion toward villagers with plausible reasons.",
    },
}
PLAYSTYLE_NAMES = tuple(PLAYSTYLES)


def describe(playstyle: str, wolf: bool) -> str:
    return PLAYSTYLES[playstyle]["wolf" if wolf else "village"]


#: The constant part of the reminder: it lives in the static system prompt (the same for the
#: whole game), so only the style sentence trails each request.
PLAY_GUIDE = (
    "How to play: base suspicion on votes, contradictions and claims, never on character "
    "stories. If most players agree on a target, ask why nobody defends them; total agreement "
    "is suspicious, because wolves coordinate. Apply your reasoning to yourself too. Remember "
    "earlier days and continue unfinished discussions. When you speak, use 1-3 sentences."
)


def reminder(playstyle: str, wolf: bool) -> str:
    """The style sentence after the command of every bot request; never stored in the state."""
    return f"Your playstyle now ({playstyle}): {describe(playstyle, wolf)}"


#: The hook's extra option: no playstyle sentence at all (the unguided baseline, as `any` is in
#: dialogue domains).
UNSTEERED = "unsteered"
#: Everything a chooser may answer, in action order (the playstyle game uses the same order).
STYLE_OPTIONS: tuple[str, ...] = (*PLAYSTYLE_NAMES, UNSTEERED)

#: The options the hook offers per decision kind (the router is never steered): the style
#: sentences say what to say and how to vote, none whom to kill, protect or investigate, and
#: none suits JSON notes. A distilled policy steers fewer (`solved_decision`).
DECISION_OPTIONS: dict[str, tuple[str, ...]] = {
    "speak": STYLE_OPTIONS,
    "pack_chat": STYLE_OPTIONS,
    "vote": STYLE_OPTIONS,
    "night": (UNSTEERED,),
    "summary": (UNSTEERED,),
}


def solved_decision(phase: str, decision: str) -> bool:
    """A discussion turn: the one decision the playstyle game contains, so the only one a
    distilled policy was trained on."""
    return phase == "discussion" and decision == "speak"


def options_for(kind: str) -> tuple[str, ...]:
    if kind not in DECISION_OPTIONS:
        raise ValueError(f"decision kind {kind!r} has no playstyle options "
                         f"(steered kinds: {list(DECISION_OPTIONS)})")
    return DECISION_OPTIONS[kind]


def legal_style(style: str, options: list[str] | tuple[str, ...]) -> str:
    """`style` where allowed, else `unsteered`, else the first option (the built-in choosers'
    fallback instead of an illegal answer)."""
    if style in options:
        return style
    return UNSTEERED if UNSTEERED in options else options[0]


class PastStyle(BaseModel):
    """One of the bot's own earlier playstyle choices (its own past actions, as in CFR)."""

    step: int
    day: int
    decision: str
    style: str


class HookInput(BaseModel):
    """What the playstyle hook sees at one bot decision (built by `hook_view.hook_input`);
    `text` never holds the rules or a reminder, so an embedder reads the situation, not the
    label."""

    bot: str
    role: str
    team: str
    model: str
    game_id: str
    step: int
    day: int
    phase: str
    decision: str
    #: Seed of this decision's style draw, derived from the game seed: replay and resume make
    #: the same draw.
    seed: int
    assigned_playstyle: str
    #: What the chooser may answer at this decision (`options_for(kind)`).
    options: list[str] = Field(default_factory=lambda: list(STYLE_OPTIONS))
    #: Discussion decisions: turns left today, this one included (None for other decisions).
    turns_left_today: int | None = None
    #: Vote decisions: votes already cast today before this one, 0-based (None otherwise).
    vote_position: int | None = None
    #: Today's votes so far, in order, as "voter>target" (public).
    votes_today: list[str] = Field(default_factory=list)
    past_styles: list[PastStyle] = Field(default_factory=list)
    living: list[str] = Field(default_factory=list)
    dead: dict[str, str] = Field(default_factory=dict)
    legal_targets: list[str] = Field(default_factory=list)
    pack: list[str] = Field(default_factory=list)
    text: str = ""


#: The former name of the hook input (kept so existing choosers keep importing it).
InfoState = HookInput


class StyleChoice(BaseModel):
    """A chooser's answer: the distribution and the style drawn from it (stored per decision)."""

    style: str
    probs: dict[str, float]
    #: Filled in by the hook (who, when, with which seed), so the state can keep the history.
    bot: str = ""
    step: int = 0
    day: int = 0
    decision: str = ""
    seed: int = 0


def sample_style(probs: dict[str, float], seed: int) -> str:
    """Draw one style from `probs` with `seed` (inverse CDF over the sorted-by-option order)."""
    total = sum(max(p, 0.0) for p in probs.values())
    if total <= 0:
        raise ValueError(f"playstyle distribution has no mass: {probs}")
    u = random.Random(seed).random() * total
    acc = 0.0
    names = [o for o in STYLE_OPTIONS if o in probs] + sorted(set(probs) - set(STYLE_OPTIONS))
    for name in names:
        acc += max(probs[name], 0.0)
        if u < acc:
            return name
    return names[-1]


@runtime_checkable
class PlaystyleChooser(Protocol):
    """Picks the playstyle of one bot decision.

    A pure function of its `HookInput`: one chooser serves every bot of a game, so memory
    between calls would leak one bot's private information into another's decision and break
    replay. Sample with `info.seed`; answer within `info.options` (else a `ValueError`); a
    plain style name means a point mass on it."""

    def choose(self, info: HookInput) -> StyleChoice | str:
        ...


class AssignedPlaystyle:
    """The default chooser: the bot's assigned playstyle (`legal_style`'s fallback where the
    decision does not allow it)."""

    def choose(self, info: HookInput) -> StyleChoice:
        style = legal_style(info.assigned_playstyle, info.options)
        return StyleChoice(style=style, probs={style: 1.0})


class UniformPlaystyle:
    """A baseline: each decision draws uniformly from the playstyles it allows (`unsteered`
    only when it is the sole option)."""

    def choose(self, info: HookInput) -> StyleChoice:
        names = [o for o in info.options if o != UNSTEERED] or list(info.options)
        probs = {name: 1.0 / len(names) for name in names}
        return StyleChoice(style=sample_style(probs, info.seed), probs=probs)


class FixedPlaystyle:
    """Always one option (a style or `unsteered`): the playstyle game's branches use it."""

    def __init__(self, style: str):
        if style not in STYLE_OPTIONS:
            raise ValueError(f"style: {style!r} is not one of {list(STYLE_OPTIONS)}")
        self.style = style

    def choose(self, info: HookInput) -> StyleChoice:
        style = legal_style(self.style, info.options)  # falls back where not allowed
        return StyleChoice(style=style, probs={style: 1.0})


class TeamChooser:
    """Steer one team (or both) with `steered`; everyone else keeps `baseline`'s choice."""

    def __init__(self, steered: PlaystyleChooser, team: str,
                 baseline: PlaystyleChooser | None = None):
        if team not in ("village", "werewolves", "both"):
            raise ValueError(f"steer team: expected village, werewolves or both, got {team!r}")
        self.steered, self.team = steered, team
        self.baseline = baseline or AssignedPlaystyle()

    def choose(self, info: HookInput) -> StyleChoice | str:
        if self.team == "both" or info.team == self.team:
            return self.steered.choose(info)
        return self.baseline.choose(info)
