"""Six playstyles (one description per side) and the hook that picks one at every decision.

The hook is where a trained policy plugs in: `PlaystyleChooser.choose(info)` sees the bot's
information state both as the text the bot is about to read and as structured fields, and
returns a playstyle name. The choice and the information state are recorded with the decision,
so logs double as training data.
"""

from __future__ import annotations

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


class InfoState(BaseModel):
    """What a bot knows at a decision: rendered text plus fields a policy can featurize."""

    bot: str
    role: str
    team: str
    assigned_playstyle: str
    day: int
    phase: str
    decision: str
    living: list[str]
    dead: dict[str, str] = Field(default_factory=dict)
    legal_targets: list[str] = Field(default_factory=list)
    pack: list[str] = Field(default_factory=list)
    votes_against_me_today: int = 0
    messages_today: int = 0
    text: str = ""


@runtime_checkable
class PlaystyleChooser(Protocol):
    def choose(self, info: InfoState) -> str:
        """Return one of PLAYSTYLE_NAMES for the decision described by `info`."""
        ...


class AssignedPlaystyle:
    """The default chooser: always the bot's assigned playstyle."""

    def choose(self, info: InfoState) -> str:
        return info.assigned_playstyle
