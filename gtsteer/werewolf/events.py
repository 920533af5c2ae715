"""What happened in one step, as plain dicts tagged with their `audience` (`visibility`), the
god-only detail of a public event under `secret`; `visibility.for_viewer` is the one filter
every view goes through.
"""

from __future__ import annotations

from gtsteer.werewolf.prompts import abduction_notice, action_line
from gtsteer.werewolf.state import Decision, GameState, NightResult
from gtsteer.werewolf.visibility import (
    ALL,
    GOD_ONLY,
    Event,
    action_audience,
    message_audience,
    notice_audience,
)


def step_events(before: GameState, after: GameState, decision: Decision | None) -> list[Event]:
    """The events of the step before -> after, each with its audience."""
    out: list[Event] = []
    step = after.step
    if decision is not None:
        out.append({
            "type": "decision", "audience": GOD_ONLY, "step": step, "kind": decision.kind,
            "actor": decision.actor, "playstyle": decision.playstyle, "target": decision.target,
            "speakers": decision.speakers, "fallback": decision.fallback,
            "error": decision.error, "folded": decision.folded,
        })
    for v in after.votes[len(before.votes):]:
        out.append({"type": "vote", "audience": ALL, "day": v.day, "order": v.order,
                    "voter": v.voter, "target": v.target,
                    "secret": {"reason": v.reason, "fallback": v.fallback, "error": v.error}})
    for a in after.night_actions[len(before.night_actions):]:
        out.append({
            "type": "night_action", "audience": action_audience(a), "night": a.night,
            "actor": a.actor, "verb": a.verb, "target": a.target, "result": a.result,
            "blocked": a.blocked, "failed": a.failed, "text": action_line(a),
            "secret": {"role": a.role.value, "reason": a.reason, "fallback": a.fallback,
                       "error": a.error},
        })
        for name in notice_audience(a):  # the abductee learns only that it happened to them
            out.append({"type": "notice", "audience": [name], "night": a.night,
                        "player": name, "text": abduction_notice(a.night, name)})
    for s in after.summaries[len(before.summaries):]:
        out.append({"type": "notes", "audience": GOD_ONLY, "day": s.day, "bot": s.bot,
                    "notes": s.notes.model_dump(), "fallback": s.fallback})
    for r in after.day_results[len(before.day_results):]:
        out.append({"type": "day_result", "audience": ALL, "day": r.day, "tally": r.tally,
                    "eliminated": r.eliminated, "role": r.role.value if r.role else None,
                    "tie": r.tie})
    for nr in after.night_results[len(before.night_results):]:
        deaths = night_deaths(nr)
        out.append({"type": "night_result", "audience": ALL, "night": nr.night,
                    "deaths": [{"name": d["name"], "role": d["role"]} for d in deaths],
                    "secret": {"causes": {d["name"]: d.get("cause") for d in deaths}}})
    alive_before = set(before.living())
    for p in after.players:
        if p.name in alive_before and not p.alive:
            out.append({"type": "death", "audience": ALL, "name": p.name,
                        "role": p.role.value, "day": p.died_day, "cause": p.cause})
    for m in after.messages[len(before.messages):]:
        out.append({"type": "message", "audience": message_audience(after, m), "id": m.id,
                    "day": m.day, "phase": m.phase, "channel": m.channel, "author": m.author,
                    "text": m.text})
    if (before.day, before.phase) != (after.day, after.phase):
        out.append({"type": "phase", "audience": ALL, "day": after.day, "phase": after.phase})
    if after.over and not before.over:
        out.append({"type": "over", "audience": ALL, "winner": after.winner,
                    "end_reason": after.end_reason,
                    "roles": {p.name: p.role.value for p in after.players}})
    return out


def night_deaths(r: NightResult) -> list[Event]:
    return [{"name": d.name, "role": d.role.value, "cause": d.cause} for d in r.deaths]
