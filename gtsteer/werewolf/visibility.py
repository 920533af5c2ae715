"""Who may see what in a Werewolf game: the one rule set every view asks.

A bot sees exactly what its seat would (`bot_viewer`); a spectator sees the public table; the
god view sees everything. Each thing that happens has an audience, decided from the state and
never from wording: public events everyone (`ALL`), pack chat the werewolves, a night action
its `observers`, the abductee's notice those `notified` (that it happened, never by whom), and
decisions, playstyles, models, notes and a public event's `secret` detail the god view only.
`Viewer.sees(audience)` is the single test; `for_viewer` filters tagged events with it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import ChatMessage, GameState, NightAction, Pending

Event = dict[str, Any]
#: Who may see something: everyone, the god view only, or these players (and the god view).
Audience = Literal["all", "god"] | list[str]
ALL: Audience = "all"
GOD_ONLY: Audience = "god"


class Viewer(BaseModel):

    kind: Literal["public", "seat", "god"] = "public"
    name: str | None = None

    @property
    def god(self) -> bool:
        return self.kind == "god"

    @property
    def seat(self) -> str | None:
        return self.name if self.kind == "seat" else None

    def sees(self, audience: Audience) -> bool:
        """Whether this viewer may see something meant for `audience`."""
        if self.god or audience == ALL:
            return True
        if audience == GOD_ONLY:
            return False
        return self.seat is not None and self.seat in audience


PUBLIC = Viewer()
GOD = Viewer(kind="god")


def bot_viewer(bot: str) -> Viewer:
    """A bot sees what its seat sees: nothing more reaches its prompt or its hook."""
    return Viewer(kind="seat", name=bot)


def pack_audience(state: GameState) -> list[str]:
    """Who reads pack chat and knows the pack: every werewolf, living or dead."""
    return state.wolves()


def message_audience(state: GameState, message: ChatMessage) -> Audience:
    return ALL if message.channel == "public" else pack_audience(state)


def action_audience(action: NightAction) -> list[str]:
    return list(action.observers)


def notice_audience(action: NightAction) -> list[str]:
    return list(action.notified)


def visible(event: Event, viewer: Viewer) -> bool:
    return viewer.sees(event["audience"])


def for_viewer(events: list[Event], viewer: Viewer) -> list[Event]:
    """The events this viewer may see, with god-only detail and audiences removed."""
    out = []
    for e in events:
        if not visible(e, viewer):
            continue
        e = dict(e)
        e.pop("audience")
        secret = e.pop("secret", None)
        if viewer.god and secret:
            e.update(secret)
        out.append(e)
    return out


def knows_role(state: GameState, viewer: Viewer, name: str) -> bool:
    """Roles are revealed at death and at the end; a wolf knows its pack; a seat its own."""
    p = state.player(name)
    if viewer.god or state.over or not p.alive or name == viewer.seat:
        return True
    pack = pack_audience(state)
    return name in pack and viewer.seat is not None and viewer.sees(pack)


def players_view(state: GameState, viewer: Viewer) -> list[Event]:
    out = []
    for p in state.players:
        row: Event = {"name": p.name, "alive": p.alive, "died_day": p.died_day,
                      "cause": p.cause, "human": p.human, "me": p.name == viewer.seat,
                      "role": p.role.value if knows_role(state, viewer, p.name) else None}
        if viewer.god or p.name == viewer.seat:
            row["story"] = p.story
        if viewer.god:
            row.update(playstyle=p.playstyle, model=p.model)
        out.append(row)
    return out


def me_view(state: GameState, viewer: Viewer) -> Event | None:
    if viewer.seat is None:
        return None
    me = state.player(viewer.seat)
    pack = ([w for w in state.wolves() if w != me.name] if me.role is Role.WEREWOLF else [])
    return {"name": me.name, "role": me.role.value, "alive": me.alive, "story": me.story,
            "pack": pack}


def turn_view(state: GameState, viewer: Viewer, want: Pending | None) -> Event | None:
    """Whose turn it is, as far as this viewer may know (never a night actor it cannot see)."""
    if want is None:
        return None
    yours = want.actor is not None and want.actor == viewer.seat
    wolf_seat = viewer.seat is not None and viewer.sees(pack_audience(state))
    if want.kind in ("pack_chat", "night") and not (viewer.god or yours):
        pack_business = want.kind == "pack_chat" or want.verb == "kill"
        if not (pack_business and wolf_seat):
            return {"kind": "night", "actor": None, "verb": None, "yours": False,
                    "legal_targets": []}
    actor_human = want.actor is not None and state.player(want.actor).human
    out: Event = {"kind": want.kind, "actor": want.actor, "verb": want.verb, "yours": yours,
                  "human": actor_human,
                  "legal_targets": list(want.legal_targets) if (yours or viewer.god) else []}
    if yours or viewer.god:
        out["actions"] = available_actions(want)
    if want.turn is not None:  # the discussion's turn count is public
        out.update(turn=want.turn, turns_total=want.turns_total)
    return out


def available_actions(want: Pending) -> dict[str, list[str]]:
    """Night choices: each available action with its legal targets."""
    if want.actions:
        return {k: list(v) for k, v in want.actions.items()}
    if want.kind == "night" and want.verb:
        return {want.verb: list(want.legal_targets)}
    return {}
