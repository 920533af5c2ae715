"""What happened in one step, as events tagged with who may see them.

Every step of the engine becomes a list of plain dicts. Each carries an `audience`: "all"
(public), "god" (spectators only), or a list of player names (the observers of a night action,
the pack for pack chat, the abducted player for their notice). God-only detail of an otherwise
public event (a vote's reason, a fallback flag) sits under `secret`. `for_viewer` is the only
place that decides what a viewer receives; the live stream, the page snapshot and the replay all
go through it, so there is one filter to audit.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from gtsteer.werewolf.prompts import abduction_notice, action_line
from gtsteer.werewolf.rules import Role
from gtsteer.werewolf.state import Decision, GameState, NightResult, Pending

Event = dict[str, Any]


class Viewer(BaseModel):
    """Who is looking: a spectator of the public table, a seated player, or the god view."""

    kind: Literal["public", "seat", "god"] = "public"
    name: str | None = None

    @property
    def god(self) -> bool:
        return self.kind == "god"

    @property
    def seat(self) -> str | None:
        return self.name if self.kind == "seat" else None


PUBLIC = Viewer()
GOD = Viewer(kind="god")


def step_events(before: GameState, after: GameState, decision: Decision | None) -> list[Event]:
    """The events of the step before -> after, each with its audience."""
    out: list[Event] = []
    step = after.step
    wolves = after.wolves()
    if decision is not None:
        out.append({
            "type": "decision", "audience": "god", "step": step, "kind": decision.kind,
            "actor": decision.actor, "playstyle": decision.playstyle, "target": decision.target,
            "speakers": decision.speakers, "fallback": decision.fallback,
            "error": decision.error, "folded": decision.folded,
        })
    for v in after.votes[len(before.votes):]:
        out.append({"type": "vote", "audience": "all", "day": v.day, "order": v.order,
                    "voter": v.voter, "target": v.target,
                    "secret": {"reason": v.reason, "fallback": v.fallback, "error": v.error}})
    for a in after.night_actions[len(before.night_actions):]:
        out.append({
            "type": "night_action", "audience": list(a.observers), "night": a.night,
            "actor": a.actor, "verb": a.verb, "target": a.target, "result": a.result,
            "blocked": a.blocked, "failed": a.failed, "text": action_line(a),
            "secret": {"role": a.role.value, "reason": a.reason, "fallback": a.fallback,
                       "error": a.error},
        })
        for name in a.notified:  # the abductee learns only that it happened to them
            out.append({"type": "notice", "audience": [name], "night": a.night,
                        "player": name, "text": abduction_notice(a.night, name)})
    for s in after.summaries[len(before.summaries):]:
        out.append({"type": "notes", "audience": "god", "day": s.day, "bot": s.bot,
                    "notes": s.notes.model_dump(), "fallback": s.fallback})
    for r in after.day_results[len(before.day_results):]:
        out.append({"type": "day_result", "audience": "all", "day": r.day, "tally": r.tally,
                    "eliminated": r.eliminated, "role": r.role.value if r.role else None,
                    "tie": r.tie})
    for n in after.night_results[len(before.night_results):]:
        deaths = night_deaths(n)
        out.append({"type": "night_result", "audience": "all", "night": n.night,
                    "deaths": [{"name": d["name"], "role": d["role"]} for d in deaths],
                    "secret": {"causes": {d["name"]: d.get("cause") for d in deaths}}})
    alive_before = set(before.living())
    for p in after.players:
        if p.name in alive_before and not p.alive:
            out.append({"type": "death", "audience": "all", "name": p.name,
                        "role": p.role.value, "day": p.died_day, "cause": p.cause})
    for m in after.messages[len(before.messages):]:
        audience: str | list[str] = "all" if m.channel == "public" else list(wolves)
        out.append({"type": "message", "audience": audience, "id": m.id, "day": m.day,
                    "phase": m.phase, "channel": m.channel, "author": m.author, "text": m.text})
    if (before.day, before.phase) != (after.day, after.phase):
        out.append({"type": "phase", "audience": "all", "day": after.day, "phase": after.phase})
    if after.over and not before.over:
        out.append({"type": "over", "audience": "all", "winner": after.winner,
                    "end_reason": after.end_reason,
                    "roles": {p.name: p.role.value for p in after.players}})
    return out


def night_deaths(r: NightResult) -> list[Event]:
    return [{"name": d.name, "role": d.role.value, "cause": d.cause} for d in r.deaths]


def visible(event: Event, viewer: Viewer) -> bool:
    audience = event["audience"]
    if viewer.god or audience == "all":
        return True
    if audience == "god":
        return False
    return viewer.seat is not None and viewer.seat in audience


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


# ---- the seat's view of the current state ---------------------------------------------------


def knows_role(state: GameState, viewer: Viewer, name: str) -> bool:
    p = state.player(name)
    if viewer.god or state.over or not p.alive or name == viewer.seat:
        return True
    if viewer.seat is None:
        return False
    me = state.player(viewer.seat)
    return me.role is Role.WEREWOLF and p.role is Role.WEREWOLF


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
    """The seat's own card: role, story, and the pack for a werewolf."""
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
    wolf_seat = (viewer.seat is not None
                 and state.player(viewer.seat).role is Role.WEREWOLF)
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
    """Night choices: each available action with its legal targets (the slot's own, plus e.g.
    the doctor's one-time kill under the reference rules)."""
    if want.actions:
        return {k: list(v) for k, v in want.actions.items()}
    if want.kind == "night" and want.verb:
        return {want.verb: list(want.legal_targets)}
    return {}
