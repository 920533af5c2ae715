"""The pure state machine: `pending(state)` says what is needed, `step(state, decision)` applies it.

No I/O, no clocks, no global randomness: every random choice (seating of roles, vote order) is
derived from the game seed, so a state plus a decision fully determines the next state. The
engine validates every decision against the pending one and raises `IllegalDecision` otherwise;
bots never reach it with an illegal target because they draw from `legal_targets`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gtsteer.werewolf.rules import (
    Role,
    WerewolfConfigError,
    assign_roles,
    default_wolves,
    reads_evil,
    rng,
    validate_setup,
)
from gtsteer.werewolf.state import (
    MODERATOR,
    ChatMessage,
    DayResult,
    Decision,
    GameConfig,
    GameState,
    NightAction,
    NightResult,
    Pending,
    Player,
    Summary,
    SummaryNotes,
    Vote,
)

SLOT_VERB = {"abduct": Role.MANIAC, "kill": Role.WEREWOLF, "protect": Role.DOCTOR,
             "investigate": Role.DETECTIVE}


class IllegalDecision(ValueError):
    """A decision that does not answer the pending one (wrong actor, kind or target)."""


def new_game(
    cast: Sequence[tuple[str, str, str]],
    *,
    seed: int = 0,
    n_wolves: int | None = None,
    maniac: bool | None = None,
    models: str | Sequence[str] = "fake",
    humans: Sequence[str] = (),
    max_days: int | None = None,
    max_messages_per_day: int = 10,
    intro: bool = True,
    game_id: str = "game",
    scene: str = "",
) -> GameState:
    """Seat the cast (name, story, playstyle) and deal roles from the seed."""
    n = len(cast)
    wolves = default_wolves(n) if n_wolves is None else n_wolves
    use_maniac = (n >= 6) if maniac is None else maniac
    validate_setup(n, wolves, use_maniac)
    names = [c[0] for c in cast]
    if len(set(names)) != n:
        raise WerewolfConfigError(f"player names must be unique (got {names})")
    for name in names:
        if not name.strip() or name == MODERATOR or not name.replace(" ", "").isalnum():
            raise WerewolfConfigError(f"bad player name {name!r}: use letters and digits")
    for human in humans:
        if human not in names:
            raise WerewolfConfigError(f"human player {human!r} is not in the cast {names}")
    model_list = [models] * n if isinstance(models, str) else list(models)
    if len(model_list) != n:
        raise WerewolfConfigError(f"need one model per player ({n}), got {len(model_list)}")
    if max_messages_per_day < 1:
        raise WerewolfConfigError("max_messages_per_day must be at least 1")
    if max_days is not None and max_days < 1:
        raise WerewolfConfigError("max_days must be at least 1")
    roles = assign_roles(n, wolves, use_maniac, seed)
    players = [
        Player(name=c[0], story=c[1], playstyle=c[2], role=r, model=m, human=c[0] in humans)
        for c, r, m in zip(cast, roles, model_list, strict=True)
    ]
    config = GameConfig(
        n_players=n, n_wolves=wolves, maniac=use_maniac, max_days=max_days,
        max_messages_per_day=max_messages_per_day, intro=intro,
    )
    state = GameState(game_id=game_id, seed=seed, config=config, players=players, scene=scene,
                      router_model=model_list[0])
    if intro:
        state.phase, state.queue = "intro", list(names)
    else:
        state.phase, state.queue = "discussion", []
    return state


# ---- what is pending ---------------------------------------------------------------------


def night_slot_actor(state: GameState, slot: str) -> str | None:
    """Who acts for a night slot, or None when nobody can (dead, or abducted)."""
    if slot.startswith("pack_chat:"):
        name = slot.split(":", 1)[1]
        p = state.player(name)
        return name if p.alive and name != state.abducted else None
    role = SLOT_VERB[slot]
    if role is Role.WEREWOLF:  # the pack leader: first living, free wolf in seating order
        free = [w for w in state.wolves(alive_only=True) if w != state.abducted]
        return free[0] if free else None
    p = state.with_role(role)
    return p.name if p is not None and p.name != state.abducted else None


def legal_targets(state: GameState, actor: str, kind: str, verb: str | None = None) -> list[str]:
    living = state.living()
    if kind == "vote":
        return [n for n in living if n != actor]
    if kind == "night":
        if verb == "kill":
            return [n for n in living if state.player(n).role is not Role.WEREWOLF]
        if verb == "protect":
            last = _last_protected(state, actor)
            return [n for n in living if n != last]
        return [n for n in living if n != actor]  # abduct, investigate
    if kind == "route":
        return [n for n in living if n != state.last_speaker]
    return []


def _last_protected(state: GameState, doctor: str) -> str | None:
    """The player the doctor protected last night (only consecutive nights are forbidden)."""
    for a in state.night_actions:
        if a.night == state.day - 1 and a.actor == doctor and a.verb == "protect" and not a.blocked:
            return a.target
    return None


def pending(state: GameState) -> Pending | None:
    if state.phase == "over":
        return None
    if state.phase == "summary":
        return Pending(kind="summary", actor=state.queue[0])
    if state.phase in ("intro", "discussion"):
        if state.queue:
            return Pending(kind="speak", actor=state.queue[0])
        return Pending(kind="route", legal_targets=legal_targets(state, "", "route"))
    if state.phase == "vote":
        actor = state.queue[0]
        return Pending(kind="vote", actor=actor, legal_targets=legal_targets(state, actor, "vote"))
    slot = state.queue[0]
    actor = night_slot_actor(state, slot)
    assert actor is not None, "normalized night queues start with an actionable slot"
    if slot.startswith("pack_chat:"):
        return Pending(kind="pack_chat", actor=actor)
    return Pending(
        kind="night", actor=actor, verb=slot,  # type: ignore[arg-type]
        legal_targets=legal_targets(state, actor, "night", slot),
    )


# ---- applying a decision -----------------------------------------------------------------


def step(state: GameState, decision: Decision) -> GameState:
    """Return the state after `decision`; the input state is never modified."""
    want = pending(state)
    if want is None:
        raise IllegalDecision("the game is over")
    if decision.kind != want.kind or (want.actor is not None and decision.actor != want.actor):
        raise IllegalDecision(
            f"expected a {want.kind} decision by {want.actor or 'the router'}, "
            f"got {decision.kind} by {decision.actor}"
        )
    s = state.model_copy(deep=True)
    s.step += 1
    if want.kind == "summary":
        s.summaries.append(Summary(day=s.day, bot=want.actor or "", notes=decision.notes
                                   or SummaryNotes(), fallback=decision.fallback,
                                   error=decision.error))
        s.queue.pop(0)
        if not s.queue:
            s.phase = "discussion"
    elif want.kind == "speak":
        _speak(s, want.actor or "", decision.text)
    elif want.kind == "route":
        speakers = list(dict.fromkeys(decision.speakers))
        bad = [n for n in speakers if n not in want.legal_targets]
        if bad or not 1 <= len(speakers) <= 5:
            raise IllegalDecision(
                f"router must pick 1 to 5 of {want.legal_targets}; got {decision.speakers}"
            )
        s.queue = speakers
    elif want.kind == "vote":
        _check_target(want, decision)
        order = sum(1 for v in s.votes if v.day == s.day) + 1
        s.votes.append(Vote(day=s.day, order=order, voter=want.actor or "",
                            target=decision.target or "", reason=decision.reason,
                            fallback=decision.fallback, error=decision.error))
        s.queue.pop(0)
        if not s.queue:
            _resolve_vote(s)
    elif want.kind == "pack_chat":
        if decision.text.strip():
            _post(s, want.actor or "", decision.text, channel="pack")
        s.queue.pop(0)
    else:
        _check_target(want, decision)
        _night_action(s, want, decision)
        s.queue.pop(0)
    _normalize(s)
    return s


def _check_target(want: Pending, decision: Decision) -> None:
    if decision.target not in want.legal_targets:
        raise IllegalDecision(
            f"{want.actor}: target {decision.target!r} is not one of {want.legal_targets}"
        )


def _post(s: GameState, author: str, text: str, channel: str = "public") -> None:
    s.messages.append(ChatMessage(id=len(s.messages) + 1, day=s.day, phase=s.phase,
                                  channel=channel, author=author, text=text.strip()))  # type: ignore[arg-type]


def _speak(s: GameState, actor: str, text: str) -> None:
    if text.strip():
        _post(s, actor, text)
    s.last_speaker = actor
    s.queue.pop(0)
    if s.phase == "intro" and not s.queue:
        s.phase = "discussion"
        return
    if s.phase == "discussion":
        if s.player(actor).human and text.strip():
            s.queue = []  # a human's line redirects the talk: the router picks again now
        s.turns_today += 1
        if s.turns_today >= s.config.max_messages_per_day:
            _start_vote(s)


def _start_vote(s: GameState) -> None:
    s.phase = "vote"
    order = s.living()
    rng(s.seed, "vote-order", s.day).shuffle(order)
    s.queue = order


def _resolve_vote(s: GameState) -> None:
    tally = Counter(v.target for v in s.votes if v.day == s.day)
    top = max(tally.values())
    leaders = sorted(n for n, c in tally.items() if c == top)
    result = DayResult(day=s.day, tally=dict(sorted(tally.items())), eliminated=None,
                       tie=len(leaders) > 1)
    if len(leaders) == 1:
        victim = s.player(leaders[0])
        victim.alive, victim.died_day, victim.cause = False, s.day, "vote"
        result.eliminated, result.role = victim.name, victim.role
        _post(s, MODERATOR, f"The village eliminated {victim.name} ({victim.role.value}).")
    else:
        _post(s, MODERATOR, f"The vote is tied between {', '.join(leaders)}: nobody is "
              "eliminated today.")
    s.day_results.append(result)
    if not _check_winner(s):
        _start_night(s)


def begin_night(state: GameState) -> GameState:
    """The state with tonight's actions pending (skipping the day's vote): for fixtures."""
    s = state.model_copy(deep=True)
    _start_night(s)
    _normalize(s)
    return s


def _start_night(s: GameState) -> None:
    s.phase = "night"
    s.abducted = None
    slots = ["abduct"]
    pack = s.wolves(alive_only=True)
    if len(pack) > 1:
        slots += [f"pack_chat:{w}" for w in pack]
    s.queue = slots + ["kill", "protect", "investigate"]


def _night_action(s: GameState, want: Pending, d: Decision) -> None:
    actor = s.player(want.actor or "")
    target = d.target or ""
    observers = [actor.name]
    result = None
    if want.verb == "abduct":
        s.abducted = target  # the target only learns *that* they were abducted (a notice)
    elif want.verb == "kill":
        observers = s.wolves()
    elif want.verb == "investigate":
        result = "evil" if reads_evil(s.player(target).role) else "good"
    s.night_actions.append(NightAction(
        night=s.day, actor=actor.name, role=actor.role, verb=want.verb or "abduct",
        target=target, result=result, reason=d.reason, fallback=d.fallback, error=d.error,
        observers=list(dict.fromkeys(observers)),
    ))


def _normalize(s: GameState) -> None:
    """Skip night slots nobody can take (recording blocked actions), and resolve the night."""
    while s.phase == "night" and s.queue:
        slot = s.queue[0]
        if night_slot_actor(s, slot) is not None:
            return
        s.queue.pop(0)
        blocked = _blocked_actor(s, slot)
        if blocked is not None:
            p = s.player(blocked)
            s.night_actions.append(NightAction(
                night=s.day, actor=p.name, role=p.role, verb=slot,  # type: ignore[arg-type]
                target=None, blocked=True, observers=[p.name],
            ))
    if s.phase == "night" and not s.queue:
        _resolve_night(s)


def _blocked_actor(s: GameState, slot: str) -> str | None:
    """The living player an abduction stopped from taking `slot` (None if nobody was there)."""
    if slot.startswith("pack_chat:") or s.abducted is None:
        return None
    role = SLOT_VERB[slot]
    p = s.player(s.abducted)
    if p.alive and p.role is role:
        return p.name
    return None


def _resolve_night(s: GameState) -> None:
    tonight = [a for a in s.night_actions if a.night == s.day and not a.blocked]
    kill = next((a.target for a in tonight if a.verb == "kill"), None)
    saved = {a.target for a in tonight if a.verb == "protect"}
    killed = kill if kill is not None and kill not in saved else None
    result = NightResult(night=s.day, killed=killed)
    s.abducted = None
    if killed is not None:
        victim = s.player(killed)
        victim.alive, victim.died_day, victim.cause = False, s.day, "night"
        result.role = victim.role
    s.night_results.append(result)
    s.day += 1
    s.turns_today = 0
    s.phase = "summary"  # announcements belong to the new day
    if killed is not None:
        _post(s, MODERATOR, f"Night {s.day - 1}: {killed} ({result.role.value}) was killed.")  # type: ignore[union-attr]
    else:
        _post(s, MODERATOR, f"Night {s.day - 1}: nobody died.")
    if _check_winner(s):
        return
    if s.config.max_days is not None and s.day > s.config.max_days:
        s.phase, s.winner = "over", "none"
        s.end_reason = f"day limit of {s.config.max_days} reached"
        s.queue = []
        return
    s.queue = [p.name for p in s.players if p.alive and not p.human]
    s.last_speaker = None
    if not s.queue:
        s.phase = "discussion"


def winner_of(s: GameState) -> str | None:
    wolves = len(s.wolves(alive_only=True))
    others = len(s.living()) - wolves
    if wolves == 0:
        return "village"
    if wolves >= others:
        return "werewolves"
    return None


def _check_winner(s: GameState) -> bool:
    w = winner_of(s)
    if w is None:
        return False
    s.phase, s.winner, s.queue = "over", w, []  # type: ignore[assignment]
    s.end_reason = "no werewolf is alive" if w == "village" else "the werewolves reached parity"
    _post(s, MODERATOR, f"Game over: the {w} win ({s.end_reason}).")
    return True
