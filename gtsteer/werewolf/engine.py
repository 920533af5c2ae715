"""The pure state machine: `pending(state)` says what is needed, `step(state, decision)` applies it.

No I/O, clocks or global randomness (every draw derives from the game seed), so a state and a
decision determine the next state; a decision that does not answer the pending one raises
`IllegalDecision`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from gtsteer.werewolf.prompts import night_result_line, vote_result_line
from gtsteer.werewolf.roles import ROLES, night_roles, night_verb, verb_owner
from gtsteer.werewolf.rules import (
    MAX_SPEAKERS,
    Role,
    WerewolfConfigError,
    assign_roles,
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
    NightDeath,
    NightResult,
    Pending,
    Player,
    Summary,
    SummaryNotes,
    Vote,
)

#: A game id names the game in web URLs (`/games/ID`), so only URL-safe ids are accepted.
GAME_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def check_game_id(game_id: str) -> None:
    if not GAME_ID_RE.match(game_id):
        raise WerewolfConfigError(f"game id {game_id!r} must be 1-40 letters, digits, '-' or '_' "
                                  "(the web app opens a game at /games/ID)")


class IllegalDecision(ValueError):
    """A decision that does not answer the pending one (wrong actor, kind or target)."""


def new_game(
    cast: Sequence[tuple[str, str, str]],
    config: GameConfig | None = None,
    *,
    seed: int = 0,
    models: str | Sequence[str] = "fake",
    humans: Sequence[str] = (),
    game_id: str = "game",
    scene: str = "",
) -> GameState:
    """Seat the cast (name, story, playstyle) under `config` (None: the defaults for its size)
    and deal roles from the seed."""
    check_game_id(game_id)
    n = len(cast)
    config = GameConfig(n_players=n) if config is None else config
    if config.n_players != n:
        raise WerewolfConfigError(f"the setup is for {config.n_players} players but the cast "
                                  f"has {n}")
    validate_setup(n, config.n_wolves, config.optional_roles())
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
    if config.max_messages_per_day is not None and config.max_messages_per_day < 1:
        raise WerewolfConfigError("max_messages_per_day must be at least 1")
    if config.max_days is not None and config.max_days < 1:
        raise WerewolfConfigError("max_days must be at least 1")
    roles = assign_roles(n, config.n_wolves, config.optional_roles(), seed)
    players = [
        Player(name=c[0], story=c[1], playstyle=c[2], role=r, model=m, human=c[0] in humans)
        for c, r, m in zip(cast, roles, model_list, strict=True)
    ]
    state = GameState(game_id=game_id, seed=seed, config=config.model_copy(deep=True),
                      players=players, scene=scene, router_model=model_list[0])
    if config.intro:
        state.phase, state.queue = "intro", list(names)
    else:
        state.phase, state.queue = "discussion", []
    return state


def pack_order(state: GameState) -> list[str]:
    """Tonight's pack-chat order: the living wolves, shuffled per night (reference rules) or in
    seating order (simple rules)."""
    pack = state.wolves(alive_only=True)
    if state.config.rules == "reference":
        rng(state.seed, "pack-order", state.day).shuffle(pack)
    return pack


def night_slot_actor(state: GameState, slot: str) -> str | None:
    """Who acts for a night slot, or None when nobody can (dead, or abducted)."""
    reference = state.config.rules == "reference"
    if slot.startswith("pack_chat:"):
        name = slot.split(":", 1)[1]
        p = state.player(name)
        # Reference: an abducted wolf still chats (it only cannot pick the kill).
        return name if p.alive and (reference or name != state.abducted) else None
    role = verb_owner(slot)
    if role is Role.WEREWOLF:
        free = [w for w in pack_order(state) if w != state.abducted]
        if not free:
            return None
        # Reference: the last wolf to speak in the pack chat picks; simple: the first free wolf.
        return free[-1] if reference else free[0]
    holder = state.with_role(role)
    return holder.name if holder is not None and holder.name != state.abducted else None


def legal_targets(state: GameState, actor: str, kind: str, verb: str | None = None) -> list[str]:
    living = state.living()
    if kind == "vote":
        return [n for n in living if n != actor]
    if kind == "night":
        spec = ROLES[state.player(actor).role]
        night = spec.night
        if night is None or night.verb != verb:  # a one-time kill
            return [n for n in living if n != actor]
        last = (_last_target(state, actor, night.verb)
                if state.config.rules in night.repeat_ban else None)
        return [n for n in living if n != last and (night.self_target or n != actor)
                and (night.own_team or ROLES[state.player(n).role].team != spec.team)]
    if kind == "route":
        return [n for n in living if n != state.last_speaker]
    return []


def night_actions_for(state: GameState, actor: str, slot: str) -> dict[str, list[str]]:
    """The actions a night slot offers (reference rules add an unused one-time kill), each with
    its legal targets."""
    actions = {slot: legal_targets(state, actor, "night", slot)}
    role = state.player(actor).role
    if (state.config.rules == "reference" and ROLES[role].one_time_kill
            and not kill_used(state, actor)):
        actions["kill"] = legal_targets(state, actor, "night", "kill")
    return {a: t for a, t in actions.items() if t}


def kill_used(state: GameState, actor: str) -> bool:
    return any(a.actor == actor and a.verb == "kill" and not a.blocked
               for a in state.night_actions)


def _last_target(state: GameState, actor: str, verb: str) -> str | None:
    """The player `actor` targeted with `verb` last night (only consecutive nights are
    forbidden; a blocked night does not count)."""
    for a in state.night_actions:
        if a.night == state.day - 1 and a.actor == actor and a.verb == verb and not a.blocked:
            return a.target
    return None


def pending(state: GameState) -> Pending | None:
    if state.phase == "over":
        return None
    if state.phase == "summary":
        return Pending(kind="summary", actor=state.queue[0])
    if state.phase in ("intro", "discussion"):
        if state.queue:
            if state.phase == "intro":
                return Pending(kind="speak", actor=state.queue[0])
            return Pending(kind="speak", actor=state.queue[0], turn=state.turns_today + 1,
                           turns_total=state.turn_limit())
        return Pending(kind="route", legal_targets=legal_targets(state, "", "route"))
    if state.phase == "vote":
        actor = state.queue[0]
        return Pending(kind="vote", actor=actor,
                       legal_targets=legal_targets(state, actor, "vote"))
    slot = state.queue[0]
    night_actor = night_slot_actor(state, slot)
    assert night_actor is not None, "normalized night queues start with an actionable slot"
    if slot.startswith("pack_chat:"):
        return Pending(kind="pack_chat", actor=night_actor)
    actions = night_actions_for(state, night_actor, slot)
    return Pending(
        kind="night", actor=night_actor, verb=slot,
        legal_targets=actions.get(slot, []), actions=actions,
    )


def pending_for(state: GameState, actor: str, kind: str) -> Pending:
    """The decision `actor` would face if it were their turn to `kind` now ("vote", "night":
    their role's own slot, "speak": the next discussion turn), whatever is pending: for asking
    one bot out of turn (`werewolf act`). A ValueError names what cannot act."""
    names = [p.name for p in state.players]
    if actor not in names:
        raise ValueError(f"no player {actor!r}; players: {names}")
    me = state.player(actor)
    if not me.alive:
        raise ValueError(f"{actor} is dead and takes no actions")
    if kind == "vote":
        return Pending(kind="vote", actor=actor, legal_targets=legal_targets(state, actor, "vote"))
    if kind == "night":
        verb = night_verb(me.role)
        if verb is None:
            raise ValueError(f"{actor} is a {me.role.value} and has no night action")
        actions = night_actions_for(state, actor, verb)
        return Pending(kind="night", actor=actor, verb=verb,
                       legal_targets=actions.get(verb, []), actions=actions)
    if kind == "speak":
        return Pending(kind="speak", actor=actor, turn=state.turns_today + 1,
                       turns_total=state.turn_limit())
    raise ValueError(f"no out-of-turn {kind!r} decision: vote, night or speak")


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
    if decision.style_choice is not None:
        s.style_history.append(decision.style_choice)
    if want.kind == "summary":
        s.summaries.append(Summary(day=s.day, bot=want.actor or "", notes=decision.notes
                                   or SummaryNotes(), fallback=decision.fallback,
                                   error=decision.error))
        s.queue.pop(0)
        if not s.queue:
            _start_day(s)
    elif want.kind == "speak":
        _speak(s, want.actor or "", decision.text)
    elif want.kind == "route":
        speakers = list(dict.fromkeys(decision.speakers))
        bad = [n for n in speakers if n not in want.legal_targets]
        if bad or not 1 <= len(speakers) <= MAX_SPEAKERS:
            raise IllegalDecision(f"router must pick 1 to {MAX_SPEAKERS} of "
                                  f"{want.legal_targets}; got {decision.speakers}")
        s.queue = speakers
    elif want.kind == "vote":
        _check_target(want, decision.target, want.legal_targets)
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
        action = decision.action or want.verb or ""
        if action not in want.actions:
            raise IllegalDecision(
                f"{want.actor}: action {action!r} is not one of {list(want.actions)}"
            )
        _check_target(want, decision.target, want.actions[action])
        _night_action(s, want, decision, action)
        s.queue.pop(0)
    _normalize(s)
    return s


def _check_target(want: Pending, target: str | None, legal: list[str]) -> None:
    if target not in legal:
        raise IllegalDecision(f"{want.actor}: target {target!r} is not one of {legal}")


def _post(s: GameState, author: str, text: str, channel: str = "public",
          turn: int | None = None) -> None:
    s.messages.append(ChatMessage(id=len(s.messages) + 1, day=s.day, phase=s.phase,
                                  channel=channel, author=author, text=text.strip(),
                                  turn=turn))


def _speak(s: GameState, actor: str, text: str) -> None:
    discussion = s.phase == "discussion"
    if text.strip():
        _post(s, actor, text, turn=s.turns_today + 1 if discussion else None)
    s.last_speaker = actor
    s.queue.pop(0)
    if s.phase == "intro" and not s.queue:
        s.phase = "discussion"
        return
    if discussion:
        if s.player(actor).human and text.strip():
            s.queue = []  # a human's line redirects the talk: the router picks again now
        s.turns_today += 1
        if s.turns_today >= s.turn_limit():
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
    chosen = leaders[0] if len(leaders) == 1 else None
    if chosen is None and s.config.ties == "random":
        chosen = rng(s.seed, "tie-break", s.day).choice(leaders)
        result.tied = leaders
    if chosen is not None:
        victim = s.player(chosen)
        victim.alive, victim.died_day, victim.cause = False, s.day, "vote"
        result.eliminated, result.role = victim.name, victim.role
    s.day_results.append(result)
    _post(s, MODERATOR, vote_result_line(result))
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
    slots = []
    pack = pack_order(s)
    for spec in night_roles():  # the pack chats right before the pack's own slot
        if spec.role is Role.WEREWOLF and len(pack) > 1:
            rounds = 2 if s.config.rules == "reference" else 1
            slots += [f"pack_chat:{w}" for _ in range(rounds) for w in pack]
        slots.append(spec.night.verb if spec.night else "")
    s.queue = slots


def _night_action(s: GameState, want: Pending, d: Decision, action: str) -> None:
    actor = s.player(want.actor or "")
    target = d.target or ""
    observers, notified = [actor.name], []
    result = None
    # Reference rules: the abductee is immune tonight; anything aimed at them fails.
    failed = (s.config.rules == "reference" and action != "abduct" and s.abducted == target)
    if action == "abduct":
        s.abducted = target
        notified = [target]  # told *that* they were abducted, never by whom
    elif action == "kill" and actor.role is Role.WEREWOLF:
        observers = s.wolves()
    elif action == "investigate" and not failed:
        result = "evil" if reads_evil(s.player(target).role) else "good"
    s.night_actions.append(NightAction(
        night=s.day, actor=actor.name, role=actor.role, verb=action,
        target=target, result=result, failed=failed, reason=d.reason, fallback=d.fallback,
        error=d.error, observers=list(dict.fromkeys(observers)), notified=notified,
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
                night=s.day, actor=p.name, role=p.role, verb=slot,
                target=None, blocked=True, observers=[p.name],
            ))
    if s.phase == "night" and not s.queue:
        _resolve_night(s)


def _blocked_actor(s: GameState, slot: str) -> str | None:
    """The living player an abduction stopped from taking `slot` (None if nobody was there)."""
    if slot.startswith("pack_chat:") or s.abducted is None:
        return None
    role = verb_owner(slot)
    p = s.player(s.abducted)
    if p.alive and p.role is role:
        return p.name
    return None


def night_deaths(s: GameState) -> list[NightDeath]:
    """Attacks on unprotected players, then (reference rules) a dead maniac's abductee."""
    tonight = [a for a in s.night_actions if a.night == s.day and not a.blocked and not a.failed]
    saved = {a.target for a in tonight if a.verb == "protect"}
    deaths: dict[str, str] = {}
    for a in tonight:
        if a.verb == "kill" and a.target and a.target not in saved and a.target not in deaths:
            deaths[a.target] = ROLES[a.role].kill_cause or ""
    if s.config.rules == "reference" and s.abducted and s.abducted not in deaths:
        abductor = verb_owner("abduct")
        dead_abductor = next((n for n in deaths if s.player(n).role is abductor), None)
        if dead_abductor is not None:
            deaths[s.abducted] = "abduction"
    return [NightDeath(name=n, role=s.player(n).role, cause=c)
            for n, c in deaths.items()]


def _resolve_night(s: GameState) -> None:
    """Deaths are applied and announced within the night's day; the summaries of the day and
    night that just ended follow, and only then does the next day begin."""
    result = NightResult(night=s.day, deaths=night_deaths(s))
    for death in result.deaths:
        victim = s.player(death.name)
        victim.alive, victim.died_day, victim.cause = False, s.day, "night"
    s.night_results.append(result)
    s.abducted = None
    _post(s, MODERATOR, night_result_line(result))
    if _check_winner(s):
        return
    if s.config.max_days is not None and s.day >= s.config.max_days:
        s.phase, s.winner = "over", "none"
        s.end_reason = f"day limit of {s.config.max_days} reached"
        s.queue = []
        return
    s.phase = "summary"
    s.queue = [p.name for p in s.players if p.alive and not p.human]
    if not s.queue:
        _start_day(s)


def _start_day(s: GameState) -> None:
    s.day += 1
    s.turns_today = 0
    s.last_speaker = None
    s.phase, s.queue = "discussion", []


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
