"""Six playstyles (one description per side) and the hook that picks one at every decision.

The hook is where a trained policy plugs in: `PlaystyleChooser.choose(info)` sees a compact,
situation-first `HookInput` (never the rules, never a reminder; see `hook_view`) with the bot's
own past choices and a decision seed, and returns a distribution and the style drawn from it
(or `unsteered`: no style sentence at all). Both are stored with the decision, so logs double
as training data, and a chooser is a pure function of its input.
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


class PastStyle(BaseModel):
    """One of the bot's own earlier playstyle choices (its own past actions, as in CFR)."""

    step: int
    day: int
    decision: str
    style: str


class HookInput(BaseModel):
    """What the playstyle hook sees at one bot decision (built by `hook_view.hook_input`).

    `text` is a compact, situation-first view (role and decision, the living and the dead,
    votes, private knowledge, own past styles, the last chat lines); it never holds the rules
    or a playstyle reminder, so an embedder reads the situation and not the label."""

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
    options: list[str] = Field(default_factory=lambda: list(STYLE_OPTIONS))
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

    A chooser must be a pure function of its `HookInput`: one chooser instance serves every bot
    of a game, so anything it remembered between calls would carry one bot's private
    information into another bot's decision (a leak channel), and would break replay. Sample
    with `info.seed` only. Returning a plain style name means a point mass on it."""

    def choose(self, info: HookInput) -> StyleChoice | str:
        ...


class AssignedPlaystyle:
    """The default chooser: always the bot's assigned playstyle."""

    def choose(self, info: HookInput) -> StyleChoice:
        return StyleChoice(style=info.assigned_playstyle, probs={info.assigned_playstyle: 1.0})


class UniformPlaystyle:
    """A baseline: each decision draws uniformly from the six playstyles (not `unsteered`)."""

    def choose(self, info: HookInput) -> StyleChoice:
        probs = {name: 1.0 / len(PLAYSTYLE_NAMES) for name in PLAYSTYLE_NAMES}
        return StyleChoice(style=sample_style(probs, info.seed), probs=probs)


class FixedPlaystyle:
    """Always one option (a style or `unsteered`): the playstyle game's branches use it."""

    def __init__(self, style: str):
        if style not in STYLE_OPTIONS:
            raise ValueError(f"style: {style!r} is not one of {list(STYLE_OPTIONS)}")
        self.style = style

    def choose(self, info: HookInput) -> StyleChoice:
        return StyleChoice(style=self.style, probs={self.style: 1.0})


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
