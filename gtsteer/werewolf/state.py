"""The game state and the decisions that move it: pydantic, JSON-serializable, self-contained
(the seed included), so a snapshot can be saved, reloaded and replayed anywhere. An older
snapshot is migrated on load where the change is mechanical (`migrate_state`).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gtsteer.werewolf.playstyles import PLAYSTYLES, StyleChoice
from gtsteer.werewolf.roles import ROLES, kill_causes, optional_roles
from gtsteer.werewolf.rules import Role, default_wolves, joins_by_default

Phase = Literal["summary", "intro", "discussion", "vote", "night", "over"]
DecisionKind = Literal["summary", "speak", "route", "vote", "pack_chat", "night"]


def _one_of(kind: str, allowed: set[str]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"unknown {kind} {value!r}; known: {', '.join(sorted(allowed))}")
        return value
    return AfterValidator(check)


#: A night slot's (and its action's) name: a verb of the role table (`roles.NightSpec.verb`).
NightVerb = Annotated[str, _one_of("night action", {s.night.verb for s in ROLES.values()
                                                    if s.night})]
#: What killed a player at night: a role's `kill_cause`, or the maniac's death (its abductee).
DeathCause = Annotated[str, _one_of("cause of death", kill_causes() | {"abduction"})]
RulesName = Literal["reference", "simple"]
TieRule = Literal["none", "random"]
MODERATOR = "Moderator"
#: Discussion turns per living player and day when no fixed cap is set (the reference app's
#: (alive + 1) x 3.5 messages).
TURNS_PER_PLAYER = 3.5
#: The snapshot format this gtsteer writes. 1 (no `schema_version` key): before versions.
STATE_VERSION: Final = 2


class SnapshotError(ValueError):
    """A snapshot cannot be read: not JSON, an unknown schema version, or invalid fields."""


def migrate_state(data: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's JSON data brought to `STATE_VERSION`. Version 1 from before the rule tables
    (no `config.rules`) gets the `simple` table it was played under, a night result's one
    `killed` becomes its `deaths`, and a summary written at dawn of day d gets day d - 1 (the
    day it summarises); later version-1 data is today's shape. Other versions are refused."""
    version = data.get("schema_version", 1)
    if version == STATE_VERSION:
        return data
    if version != 1:
        raise SnapshotError(f"snapshot schema version {version!r} cannot be read by this gtsteer,"
                            f" which writes version {STATE_VERSION} and migrates version 1; "
                            "use the gtsteer that wrote it")
    out = {**data, "schema_version": STATE_VERSION}
    config = data.get("config")
    if isinstance(config, dict) and "rules" not in config:
        out["config"] = {**config, "rules": "simple"}
        out["night_results"] = [_night_result_v1(r) for r in data.get("night_results") or []]
        out["summaries"] = [{**s, "day": s["day"] - 1} if isinstance(s, dict)
                            and isinstance(s.get("day"), int) else s
                            for s in data.get("summaries") or []]
    return out


def _night_result_v1(result: Any) -> Any:
    if not isinstance(result, dict) or "killed" not in result:
        return result
    rest = {k: v for k, v in result.items() if k not in ("killed", "role")}
    killed = result["killed"]
    deaths = [] if killed is None else [{"name": killed, "role": result.get("role")}]
    return {**rest, "deaths": deaths}


def load_snapshot(text: str | bytes, source: str = "snapshot") -> GameState:
    """A `GameState` from snapshot JSON (migrated if older); a one-line `SnapshotError`."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{source}: not a JSON snapshot ({exc})") from None
    if not isinstance(data, dict):
        raise SnapshotError(f"{source}: expected a JSON object, got {type(data).__name__}")
    try:
        return GameState.model_validate(migrate_state(data))
    except SnapshotError as exc:
        raise SnapshotError(f"{source}: {exc}") from None
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
                    for e in exc.errors()[:5]]
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise SnapshotError(f"{source}: invalid snapshot: {'; '.join(problems)}{more}") from None


class Snapshot(BaseModel):
    """Base of every state model: a misspelt or unknown key in a snapshot is an error, not a
    silently ignored field."""

    model_config = ConfigDict(extra="forbid")


class GameConfig(Snapshot):
    """A game's setup, declared once: dealt from, built by the CLI and the lobby, stored and
    re-dealt by a replay. `n_wolves` and each optional role's switch (`maniac`) left None take
    the defaults for `n_players`, so a stored config holds the numbers the game was dealt
    with. Whether it is playable is checked by `new_game`, never on load."""

    n_players: int = 7
    n_wolves: int = Field(None, validate_default=True)
    maniac: bool = Field(None, validate_default=True)
    #: Stop (no winner) after this many day+night cycles; None plays to a winner.
    max_days: int | None = None
    #: Discussion turns per day (intro lines not counted) before the vote starts; None scales
    #: with the living players, ceil((living + 1) x 3.5), as the reference app does.
    max_messages_per_day: int | None = None
    intro: bool = True
    #: Night rules (docs/WEREWOLF.md has both tables): the reference app's, or the simple ones.
    rules: RulesName = "reference"
    #: A tied vote: nobody is eliminated ("none"), or a seeded random tied player ("random").
    ties: TieRule = "none"

    @model_validator(mode="before")
    @classmethod
    def _sized_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        n = data.get("n_players", cls.model_fields["n_players"].default)
        if not isinstance(n, int) or isinstance(n, bool):
            return data  # n_players itself is reported invalid
        data = dict(data)
        if data.get("n_wolves") is None:
            data["n_wolves"] = default_wolves(n)
        for optional in optional_roles():
            if data.get(optional.name) is None:
                data[optional.name] = joins_by_default(optional.role, n)
        return data

    def optional_roles(self) -> list[Role]:
        """The optional roles this setup deals (each has a switch of its name, as `maniac`)."""
        return [s.role for s in optional_roles() if getattr(self, s.name)]


class Player(Snapshot):
    name: str
    role: Role
    story: str = ""
    playstyle: str = "balanced"
    model: str = "fake"
    human: bool = False
    alive: bool = True
    died_day: int | None = None
    cause: Literal["vote", "night"] | None = None

    @field_validator("playstyle")
    @classmethod
    def _known_playstyle(cls, value: str) -> str:
        if value not in PLAYSTYLES:
            raise ValueError(f"unknown playstyle {value!r}; known: {', '.join(PLAYSTYLES)}")
        return value


class ChatMessage(Snapshot):
    id: int
    day: int
    phase: str
    #: "public" (everyone), or "pack" (werewolves only).
    channel: Literal["public", "pack"] = "public"
    author: str
    text: str
    #: The discussion turn (1-based) this line was said in; None outside the discussion.
    turn: int | None = None


class Vote(Snapshot):
    day: int
    order: int
    voter: str
    target: str
    reason: str = ""
    fallback: bool = False
    error: str | None = None


class DayResult(Snapshot):
    day: int
    tally: dict[str, int]
    eliminated: str | None
    role: Role | None = None
    tie: bool = False
    #: With `ties="random"`, the tied players the seeded draw chose from.
    tied: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _role_of_the_eliminated(self) -> DayResult:
        if self.eliminated is not None and self.role is None:
            raise ValueError(f"day {self.day}: eliminated {self.eliminated!r} needs a `role` "
                             "(roles of the dead are public)")
        return self


class NightAction(Snapshot):
    night: int
    actor: str
    role: Role
    verb: NightVerb
    target: str | None
    #: Investigation result ("good"/"evil"); None otherwise.
    result: Literal["good", "evil"] | None = None
    blocked: bool = False
    #: Reference rules: the target was the maniac's abductee, so the action had no effect.
    failed: bool = False
    reason: str = ""
    fallback: bool = False
    error: str | None = None
    #: Who saw this action (the actor; the whole pack for the pack's kill).
    observers: list[str] = Field(default_factory=list)
    #: Who learns only that it happened to them (the abductee: `prompts.abduction_notice`,
    #: which does not name the maniac). Stored so an audit needs nothing but the database.
    notified: list[str] = Field(default_factory=list)


class NightDeath(Snapshot):
    name: str
    role: Role
    #: What killed them; never shown to the players (only the death and the role are public).
    cause: DeathCause = "werewolves"


class NightResult(Snapshot):
    night: int
    deaths: list[NightDeath] = Field(default_factory=list)

    @property
    def killed(self) -> list[str]:
        return [d.name for d in self.deaths]


class SummaryNotes(Snapshot):
    """A bot's own notes on the day and night that just ended (sized for chat models)."""

    allies: str = Field("", max_length=600)
    suspects: str = Field("", max_length=600)
    role_knowledge: str = Field("", max_length=600)
    social_threads: str = Field("", max_length=600)
    plans: str = Field("", max_length=600)


class Summary(Snapshot):
    #: The day (and its night) these notes summarise.
    day: int
    bot: str
    notes: SummaryNotes
    fallback: bool = False
    error: str | None = None


class Pending(BaseModel):
    """What the engine needs next: whose turn, which kind, and the legal targets. A night
    decision may offer several `actions` (each with its targets); `verb`/`legal_targets` are
    the slot's own action."""

    kind: DecisionKind
    actor: str | None = None
    verb: NightVerb | None = None
    legal_targets: list[str] = Field(default_factory=list)
    actions: dict[str, list[str]] = Field(default_factory=dict)
    #: Discussion: this turn's number and the day's turn limit (told to the bots).
    turn: int | None = None
    turns_total: int | None = None


class Decision(BaseModel):
    kind: DecisionKind
    actor: str | None = None
    text: str = ""
    target: str | None = None
    #: A night decision's chosen action (None: the slot's own verb).
    action: NightVerb | None = None
    speakers: list[str] = Field(default_factory=list)
    reason: str = ""
    notes: SummaryNotes | None = None
    fallback: bool = False
    error: str | None = None
    #: The playstyle the bot followed and the information state it was chosen from.
    playstyle: str | None = None
    info_state: dict[str, Any] | None = None
    #: The hook's distribution and draw (None for the router and humans).
    style_choice: StyleChoice | None = None
    #: Chat lines the context guard folded into a summary line so the bot's prompt fit its
    #: model's context (0: the prompt was sent whole).
    folded: int = 0
    #: Sentences of private prompt text stripped from this public line (`werewolf.echoes`).
    echoes: int = 0
    #: Extra samples this line took (`werewolf.bots.LINE_RESAMPLES`).
    resampled: int = 0
    #: The first try as the guard judged it, when it was sampled again (None: `text` is the
    #: first try, or the game was stored before first tries were kept).
    first_try: str | None = None


class GameState(Snapshot):
    #: The snapshot format (`STATE_VERSION`); read older ones with `load_snapshot`.
    schema_version: Literal[2] = STATE_VERSION
    game_id: str
    seed: int
    config: GameConfig
    scene: str = ""
    #: The model that routes the discussion (bots carry their own model strings).
    router_model: str = "fake"
    #: The served models' base URL (`--api-base`) without credentials or query, so `resume`
    #: talks to the same server; the key is never stored (`--api-key-env` again on resume).
    api_base: str | None = None
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
    #: Every bot's playstyle choices so far (hidden: the hook shows a bot only its own).
    style_history: list[StyleChoice] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names_are_players(self) -> GameState:
        names = [p.name for p in self.players]
        if len(set(names)) != len(names):
            raise ValueError(f"player names must be unique (got {names})")
        known = set(names)
        refs = [("votes.voter", v.voter) for v in self.votes]
        refs += [("votes.target", v.target) for v in self.votes]
        refs += [("night_actions.actor", a.actor) for a in self.night_actions]
        refs += [("night_actions.target", a.target) for a in self.night_actions if a.target]
        refs += [("night_results.deaths", d.name) for r in self.night_results for d in r.deaths]
        refs += [("day_results.eliminated", r.eliminated) for r in self.day_results
                 if r.eliminated]
        refs += [("summaries.bot", s.bot) for s in self.summaries]
        refs += [("abducted", self.abducted)] if self.abducted else []
        bad = [f"{field}={name!r}" for field, name in refs if name not in known]
        if bad:
            raise ValueError(f"unknown player names in {', '.join(bad[:5])}; players: {names}")
        return self

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

    def alive_on(self, day: int) -> list[str]:
        """Who was alive during day `day`'s discussion and vote (night deaths carry the
        night's number, which is the day's)."""
        return [p.name for p in self.players
                if p.alive or (p.died_day is not None and p.died_day >= day)]

    def alive_at_night(self, night: int) -> list[str]:
        """Who was alive during night `night` (before its deaths)."""
        return [p.name for p in self.players if p.alive or (p.died_day is not None and (
            p.died_day > night or (p.died_day == night and p.cause == "night")))]

    def turn_limit(self, day: int | None = None) -> int:
        """Discussion turns of a day: the fixed cap, or scaled with the living players."""
        if self.config.max_messages_per_day is not None:
            return self.config.max_messages_per_day
        living = len(self.alive_on(self.day if day is None else day))
        return math.ceil((living + 1) * TURNS_PER_PLAYER)

    def spoken_today(self) -> dict[str, int]:
        counts = {name: 0 for name in self.living()}
        for m in self.today_messages():
            if m.author in counts and m.phase == "discussion":
                counts[m.author] += 1
        return counts

    @property
    def over(self) -> bool:
        return self.phase == "over"
