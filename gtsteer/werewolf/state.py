"""The game state and the decisions that move it: pydantic, JSON-serializable, self-contained.

Everything a step needs lives here (including the seed), so a snapshot can be saved, reloaded
and replayed anywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gtsteer.werewolf.rules import Role

Phase = Literal["summary", "intro", "discussion", "vote", "night", "over"]
DecisionKind = Literal["summary", "speak", "route", "vote", "pack_chat", "night"]
NightVerb = Literal["abduct", "kill", "protect", "investigate"]
MODERATOR = "Moderator"


class GameConfig(BaseModel):
    n_players: int = 7
    n_wolves: int = 2
    maniac: bool = True
    #: Stop (no winner) after this many day+night cycles; None plays to a winner.
    max_days: int | None = None
    #: Discussion messages per day (intro lines not counted) before the vote starts.
    max_messages_per_day: int = 10
    intro: bool = True


class Player(BaseModel):
    name: str
    role: Role
    story: str = ""
    playstyle: str = "balanced"
    model: str = "fake"
    human: bool = False
    alive: bool = True
    died_day: int | None = None
    cause: Literal["vote", "night"] | None = None


class ChatMessage(BaseModel):
    id: int
    day: int
    phase: str
    #: "public" (everyone), or "pack" (werewolves only).
    channel: Literal["public", "pack"] = "public"
    author: str
    text: str


class Vote(BaseModel):
    day: int
    order: int
    voter: str
    target: str
    reason: str = ""
    fallback: bool = False
    error: str | None = None


class DayResult(BaseModel):
    day: int
    tally: dict[str, int]
    eliminated: str | None
    role: Role | None = None
    tie: bool = False


class NightAction(BaseModel):
    night: int
    actor: str
    role: Role
    verb: NightVerb
    target: str | None
    #: Investigation result ("good"/"evil"); None otherwise.
    result: Literal["good", "evil"] | None = None
    blocked: bool = False
    reason: str = ""
    fallback: bool = False
    error: str | None = None
    #: Who saw this action (the actor; the whole pack for a kill). An abducted player is not
    #: an observer: they get `prompts.abduction_notice`, which does not name the maniac.
    observers: list[str] = Field(default_factory=list)


class NightResult(BaseModel):
    night: int
    killed: str | None
    role: Role | None = None


class SummaryNotes(BaseModel):
    """A bot's own notes on the game so far, written at the start of each day."""

    allies: str = Field("", max_length=300)
    suspects: str = Field("", max_length=300)
    role_knowledge: str = Field("", max_length=300)
    social_threads: str = Field("", max_length=300)
    plans: str = Field("", max_length=300)


class Summary(BaseModel):
    day: int
    bot: str
    notes: SummaryNotes
    fallback: bool = False
    error: str | None = None


class Pending(BaseModel):
    """What the engine needs next: whose turn, which kind, and the legal targets."""

    kind: DecisionKind
    actor: str | None = None
    verb: NightVerb | None = None
    legal_targets: list[str] = Field(default_factory=list)


class Decision(BaseModel):
    kind: DecisionKind
    actor: str | None = None
    text: str = ""
    target: str | None = None
    speakers: list[str] = Field(default_factory=list)
    reason: str = ""
    notes: SummaryNotes | None = None
    fallback: bool = False
    error: str | None = None
    #: The playstyle the bot followed and the information state it was chosen from.
    playstyle: str | None = None
    info_state: dict[str, Any] | None = None


class GameState(BaseModel):
    game_id: str
    seed: int
    config: GameConfig
    scene: str = ""
    #: The model that routes the discussion (bots carry their own model strings).
    router_model: str = "fake"
    players: list[Player]
    day: int = 1
    phase: Phase = "intro"
    step: int = 0
    queue: list[str] = Field(default_factory=list)
    messages: list[ChatMessage] = Field(default_factory=list)
    votes: list[Vote] = Field(default_factory=list)
    day_results: list[DayResult] = Field(default_factory=list)
    night_actions: list[NightAction] = Field(default_factory=list)
    night_results: list[NightResult] = Field(default_factory=list)
    summaries: list[Summary] = Field(default_factory=list)
    #: Tonight's abducted player (None outside the night, or no abduction).
    abducted: str | None = None
    last_speaker: str | None = None
    #: Discussion turns taken today (a human's pass counts), capped by max_messages_per_day.
    turns_today: int = 0
    winner: Literal["village", "werewolves", "none"] | None = None
    end_reason: str = ""

    # ---- read helpers (pure) -------------------------------------------------------------

    def player(self, name: str) -> Player:
        for p in self.players:
            if p.name == name:
                return p
        raise KeyError(f"no player named {name!r}")

    def living(self) -> list[str]:
        return [p.name for p in self.players if p.alive]

    def wolves(self, alive_only: bool = False) -> list[str]:
        return [
            p.name
            for p in self.players
            if p.role is Role.WEREWOLF and (p.alive or not alive_only)
        ]

    def with_role(self, role: Role) -> Player | None:
        return next((p for p in self.players if p.role is role and p.alive), None)

    def today_messages(self, channel: str = "public") -> list[ChatMessage]:
        return [m for m in self.messages if m.day == self.day and m.channel == channel]

    def spoken_today(self) -> dict[str, int]:
        counts = {name: 0 for name in self.living()}
        for m in self.today_messages():
            if m.author in counts and m.phase == "discussion":
                counts[m.author] += 1
        return counts

    @property
    def over(self) -> bool:
        return self.phase == "over"
