"""Request bodies of the web API (pydantic, unknown keys refused): every input is checked here
or against the live game before anything changes."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gtsteer.werewolf.bots import MAX_LINE_CHARS
from gtsteer.werewolf.playstyles import PLAYSTYLE_NAMES
from gtsteer.werewolf.rules import MAX_PLAYERS, MIN_PLAYERS, max_wolves
from gtsteer.werewolf.state import MODERATOR, GameConfig

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,15}$")


def check_name(name: str) -> str:
    name = name.strip()
    if not NAME_RE.match(name):
        raise ValueError(f"name {name!r} must be 1-16 letters or digits, starting with a letter")
    if name.lower() == MODERATOR.lower():
        raise ValueError("the name Moderator is reserved")
    return name


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CastMemberIn(Strict):
    name: str
    story: str = Field("", max_length=200)
    playstyle: Literal[PLAYSTYLE_NAMES] = "balanced"  # type: ignore[valid-type]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_name(v)


class CreateGame(Strict):
    players: int = Field(7, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    wolves: int | None = Field(None, ge=1, le=max_wolves(MAX_PLAYERS))
    theme: str | None = Field(None, max_length=80)
    #: One model for every bot, or `models` with one entry per seat.
    model: str | None = Field(None, max_length=200)
    models: list[str] | None = None
    human: str | None = None
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    #: None: the engine's own scaling with the living players (where the engine has one).
    max_messages_per_day: int | None = Field(8, ge=1, le=40)
    max_days: int | None = Field(None, ge=1, le=30)
    #: Seconds between bot steps, so people can follow a fast model.
    step_delay_s: float = Field(0.0, ge=0.0, le=10.0)
    #: Choices for the engine's rule switches (see `GameManager.rule_options`).
    rules: dict[str, str] = Field(default_factory=dict)
    #: Your own characters instead of the built-in or themed cast.
    cast: list[CastMemberIn] | None = None

    @field_validator("human")
    @classmethod
    def _human(cls, v: str | None) -> str | None:
        return check_name(v) if v is not None and v.strip() else None

    @field_validator("theme")
    @classmethod
    def _theme(cls, v: str | None) -> str | None:
        v = (v or "").strip()
        if v and not re.fullmatch(r"[\w ,.'!-]+", v):
            raise ValueError("theme may use letters, digits, spaces and , . ' ! -")
        return v or None

    def to_config(self) -> GameConfig:
        """The game's setup: the lobby's sizes and limits plus its rule switches (checked
        against `GameConfig` first by `GameManager`, which names a bad one)."""
        return GameConfig(n_players=self.players, n_wolves=self.wolves, max_days=self.max_days,
                          max_messages_per_day=self.max_messages_per_day, **self.rules)

    @model_validator(mode="after")
    def _sizes(self) -> CreateGame:
        if self.models is not None and len(self.models) != self.players:
            raise ValueError(f"models needs one entry per player ({self.players}), "
                             f"got {len(self.models)}")
        if self.cast is not None:
            if len(self.cast) != self.players:
                raise ValueError(f"cast needs {self.players} characters, got {len(self.cast)}")
            names = [c.name.lower() for c in self.cast]
            if len(set(names)) != len(names):
                raise ValueError("cast names must be unique")
            if self.theme:
                raise ValueError("give a theme or a cast, not both")
        return self


class JoinSeat(Strict):
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_name(v)


class Act(Strict):
    """A human's move: a chat line (`speak`, `pack_chat`; empty text passes) or a target."""

    kind: Literal["speak", "pack_chat", "vote", "night"]
    text: str = Field("", max_length=MAX_LINE_CHARS)
    target: str | None = Field(None, max_length=40)
    #: For a night turn offering several actions: which one (default: the slot's own).
    action: Literal["abduct", "kill", "protect", "investigate"] | None = None

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        v = " ".join(v.split())  # one line: no newlines or control characters reach the chat
        if any(not ch.isprintable() for ch in v):
            raise ValueError("text has unprintable characters")
        return v

    @model_validator(mode="after")
    def _fields(self) -> Act:
        if self.kind in ("vote", "night"):
            if not self.target:
                raise ValueError(f"a {self.kind} needs a target")
            if self.text:
                raise ValueError(f"a {self.kind} takes a target, not text")
        elif self.target is not None:
            raise ValueError(f"{self.kind} takes text, not a target")
        if self.action is not None and self.kind != "night":
            raise ValueError("only a night move names an action")
        return self


class Control(Strict):
    action: Literal["pause", "resume", "step"]
