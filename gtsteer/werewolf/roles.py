"""The Werewolf roles: one table (`ROLES`) that the rules, the engine, the prompts and the web
app read, as `Domain` is the one record of a dialogue domain.

A role reusing an existing night verb is one entry here; a new verb also needs its effect in
`engine._night_action` and its line in `prompts.action_line`, and an optional role its
`GameConfig` switch of the same name. Night verbs are stored in snapshots: never renamed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

Team = Literal["village", "werewolves"]
#: How many seats a role takes: the setup's wolf count, exactly one, one when the setup's switch
#: of the role's name is on, or every seat left.
Seats = Literal["pack", "one", "optional", "rest"]


class Role(str, Enum):
    VILLAGER = "villager"
    WEREWOLF = "werewolf"
    DOCTOR = "doctor"
    DETECTIVE = "detective"
    MANIAC = "maniac"


@dataclass(frozen=True)
class NightSpec:
    """A role's own night action."""

    verb: str
    #: Place in the night (the pack chat comes right before the pack's slot).
    order: int
    #: How the night command names the action.
    word: str
    #: The role's clause of the night rules, per rule table (`rules.rules_text` joins them).
    rules: dict[str, str]
    self_target: bool = False
    #: False: never aimed at the actor's own team (the pack never kills a wolf).
    own_team: bool = True
    #: Rule tables under which last night's target is not a legal target tonight.
    repeat_ban: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RoleSpec:
    role: Role
    team: Team
    seats: Seats
    #: The role's sentence in its bot's system prompt.
    goal: str
    icon: str
    #: CSS colour of the role's tag in the web app.
    colour: str
    night: NightSpec | None = None
    #: What the detective learns: True reads evil.
    reads_evil: bool = False
    #: Reference rules: a one-time kill besides the own night action.
    one_time_kill: bool = False
    #: The cause a death by this role's kill is stored with.
    kill_cause: str | None = None
    #: An optional role is dealt by default from this many players on.
    joins_from: int | None = None
    #: How the rules' team list names the role (default: its name).
    rules_name: str = field(default="")

    @property
    def name(self) -> str:
        return self.role.value


_BOTH = frozenset({"reference", "simple"})

#: Every role, in the order roles are listed and dealt (the "rest" role's seats dealt last).
ROLES: dict[Role, RoleSpec] = {s.role: s for s in (
    RoleSpec(Role.VILLAGER, "village", "rest", icon="🧑‍🌾", colour="#b7b9cc",
             rules_name="villagers",
             goal="You are a villager: find the werewolves and vote them out."),
    RoleSpec(Role.WEREWOLF, "werewolves", "pack", icon="🐺", colour="#e2555a",
             reads_evil=True, kill_cause="werewolves",
             goal="You are a werewolf: hide it, kill a villager each night with your pack, and "
             "steer the votes onto villagers. Never reveal the pack.",
             night=NightSpec("kill", 2, "kill", own_team=False, rules={
                 "reference": "the werewolves talk privately for two rounds and the last wolf "
                 "to speak picks the victim (an abducted wolf talks but cannot pick)",
                 "simple": "the werewolves talk privately once and the first free wolf picks "
                 "the victim"})),
    RoleSpec(Role.DOCTOR, "village", "one", icon="🩺", colour="#4fc3b0",
             one_time_kill=True, kill_cause="doctor",
             goal="You are the doctor: each night protect one player from attacks (not the "
             "same player two nights in a row). Help the village find the wolves.",
             night=NightSpec("protect", 3, "protect", self_target=True, repeat_ban=_BOTH,
                             rules={
                 "reference": "the doctor protects one player (never the same one two nights "
                 "in a row; a protected player survives every attack), or once per game kills "
                 "one instead",
                 "simple": "the doctor protects one player (never the same one two nights in a "
                 "row) and a protected player survives the attack"})),
    RoleSpec(Role.DETECTIVE, "village", "one", icon="🔎", colour="#7aa2ff",
             one_time_kill=True, kill_cause="detective",
             goal="You are the detective: each night investigate one player and learn if they "
             "are good or evil. Use what you learn, carefully.",
             night=NightSpec("investigate", 4, "investigate", rules={
                 "reference": "the detective investigates one player and learns good or evil "
                 "(werewolves and the maniac read evil), or once per game kills one instead",
                 "simple": "the detective investigates one player and learns good or evil "
                 "(werewolves and the maniac read evil)"})),
    RoleSpec(Role.MANIAC, "village", "optional", icon="🎭", colour="#f08c3a",
             reads_evil=True, joins_from=6,
             goal="You are the maniac, on the village's side: each night abduct one player to "
             "block their night action. You read as evil to the detective.",
             night=NightSpec("abduct", 1, "abduct (their night action is blocked)",
                             repeat_ban=frozenset({"reference"}), rules={
                 "reference": "the maniac abducts one player, never the same one two nights "
                 "running; the abductee's own night action is blocked, any action aimed at the "
                 "abductee fails, and if the maniac dies that night the abductee dies too",
                 "simple": "the maniac abducts one player, whose night action is blocked"})),
)}


def night_roles() -> list[RoleSpec]:
    """The roles with a night action, in night order."""
    return sorted((s for s in ROLES.values() if s.night),
                  key=lambda s: s.night.order if s.night else 0)


def verb_owner(verb: str) -> Role:
    """The role whose night slot `verb` is."""
    return next(s.role for s in night_roles() if s.night and s.night.verb == verb)


def night_verb(role: Role) -> str | None:
    night = ROLES[role].night
    return night.verb if night else None


def action_word(verb: str) -> str:
    """How a night command names an action (the one-time kill is the pack's "kill")."""
    return next(s.night.word for s in night_roles() if s.night and s.night.verb == verb)


def optional_roles() -> list[RoleSpec]:
    """Roles dealt only when the setup's switch of their name is on (`GameConfig.maniac`)."""
    return [s for s in ROLES.values() if s.seats == "optional"]


def kill_causes() -> set[str]:
    return {s.kill_cause for s in ROLES.values() if s.kill_cause}
