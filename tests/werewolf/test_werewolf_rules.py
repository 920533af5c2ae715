"""Rules as tables of cases: night resolution, doctor limits, detective reads, ties, victory."""

from __future__ import annotations

import pytest
from werewolf_helpers import finish_summaries, play_night, table

from gtsteer.werewolf.engine import (
    IllegalDecision,
    begin_night,
    new_game,
    pending,
    step,
    winner_of,
)
from gtsteer.werewolf.rules import Role, WerewolfConfigError
from gtsteer.werewolf.state import Decision, GameConfig

# roles: Ann Ben Cat Dan Eve Fay Gus  (W=wolf, D=doctor, T=detective, M=maniac, V=villager)
NIGHT_CASES = [
    pytest.param("WWDTMVV", {"abduct": "Fay", "kill": "Gus", "protect": "Cat",
                             "investigate": "Ann"}, "Gus", ["abduct", "kill", "protect",
                                                            "investigate"], id="kill-lands"),
    pytest.param("WWDTMVV", {"abduct": "Fay", "kill": "Gus", "protect": "Gus",
                             "investigate": "Ann"}, None, ["abduct", "kill", "protect",
                                                           "investigate"], id="doctor-saves"),
    pytest.param("WWDTMVV", {"abduct": "Cat", "kill": "Gus", "protect": "Gus",
                             "investigate": "Ann"}, "Gus", ["abduct", "kill", "investigate"],
                 id="abducted-doctor-cannot-save"),
    pytest.param("WWDTMVV", {"abduct": "Dan", "kill": "Gus", "protect": "Cat",
                             "investigate": "Ann"}, "Gus", ["abduct", "kill", "protect"],
                 id="abducted-detective-blocked"),
    pytest.param("WVDTMVV", {"abduct": "Ann", "kill": "Gus", "protect": "Cat",
                             "investigate": "Ann"}, None, ["abduct", "protect", "investigate"],
                 id="abducted-lone-wolf-no-kill"),
    pytest.param("WWDTMVV", {"abduct": "Ann", "kill": "Gus", "protect": "Cat",
                             "investigate": "Ann"}, "Gus", ["abduct", "kill", "protect",
                                                            "investigate"],
                 id="abducted-wolf-pack-mate-kills"),
    pytest.param("WWDTVVV", {"kill": "Cat", "protect": "Cat", "investigate": "Ann"}, None,
                 ["kill", "protect", "investigate"], id="no-maniac-doctor-self-save"),
]


@pytest.mark.parametrize("rules", ["reference", "simple"])
@pytest.mark.parametrize(("roles", "choices", "killed", "asked"), NIGHT_CASES)
def test_night_resolution(roles, choices, killed, asked, rules):
    """Cases both rule tables resolve alike."""
    state = begin_night(table(roles, rules=rules))
    after, seen = play_night(state, choices)
    assert seen == asked
    assert after.night_results[-1].killed == ([killed] if killed else [])
    # the day's summaries come before the next day: the night still belongs to day 1
    assert after.day == 1 and after.phase == "summary"
    if killed:
        assert not after.player(killed).alive and after.player(killed).cause == "night"
        assert f"{killed} (" in after.messages[-1].text
    else:
        assert "nobody died" in after.messages[-1].text
    blocked = [a.actor for a in after.night_actions if a.blocked]
    abducted = choices.get("abduct")
    if abducted and after.player(abducted).role in (Role.DOCTOR, Role.DETECTIVE):
        assert blocked == [abducted]


def test_abducted_wolf_leader_is_replaced_by_pack_mate_simple():
    state = begin_night(table("WWDTMVV", rules="simple"))
    after, _ = play_night(state, {"abduct": "Ann", "kill": "Gus", "protect": "Cat",
                                  "investigate": "Eve"})
    kill = next(a for a in after.night_actions if a.verb == "kill")
    assert kill.actor == "Ben" and set(kill.observers) == {"Ann", "Ben"}
    # simple rules: one round, and the abducted wolf sits out the pack chat
    assert [m.author for m in after.messages if m.channel == "pack"] == ["Ben"]


@pytest.mark.parametrize(("target", "reading"), [
    ("Ann", "evil"), ("Eve", "evil"), ("Fay", "good"), ("Cat", "good")])
def test_detective_reads_maniac_and_wolves_as_evil(target, reading):
    state = begin_night(table("WWDTMVV"))  # Gus is the abductee (immune under reference)
    after, _ = play_night(state, {"abduct": "Gus", "kill": "Gus", "protect": "Cat",
                                  "investigate": target})
    inv = next(a for a in after.night_actions if a.verb == "investigate")
    assert (inv.target, inv.result, inv.observers) == (target, reading, ["Dan"])
    abduct = next(a for a in after.night_actions if a.verb == "abduct")
    assert abduct.observers == ["Eve"] and abduct.notified == ["Gus"]  # told, not by whom


def _night_two_protect_targets(first_protect: str, abduct_doctor_n1: bool) -> list[str]:
    state = begin_night(table("WWDTMVVV", rules="simple"))
    state, _ = play_night(state, {"abduct": "Cat" if abduct_doctor_n1 else "Gus",
                                  "kill": "Hal", "protect": first_protect, "investigate": "Ann"})
    state = begin_night(finish_summaries(state))
    while (want := pending(state)).verb != "protect":
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor, text=""))
        else:
            state = step(state, Decision(kind="night", actor=want.actor,
                                         target=want.legal_targets[-1]))
    return want.legal_targets


@pytest.mark.parametrize(("first", "blocked_n1", "forbidden"), [
    ("Fay", False, "Fay"),   # protected Fay on night 1: not Fay on night 2
    ("Cat", False, "Cat"),   # self-protection counts too
    ("Fay", True, None),     # blocked on night 1: nothing is forbidden on night 2
])
def test_doctor_cannot_protect_same_player_two_nights_running(first, blocked_n1, forbidden):
    legal = _night_two_protect_targets(first, blocked_n1)
    if forbidden:
        assert forbidden not in legal
    assert {"Ben", "Dan"} <= set(legal)
    if not forbidden:
        assert first in legal


def test_illegal_night_target_is_rejected():
    state = begin_night(table("WWDTMVV"))
    want = pending(state)
    with pytest.raises(IllegalDecision, match="not one of"):
        step(state, Decision(kind="night", actor=want.actor, target=want.actor))


def vote_day(roles: str, votes: list[str], **kwargs):
    """Everyone votes in the engine's order; votes[i] is the target of the i-th living seat."""
    state = table(roles, intro=False, max_messages_per_day=1, **kwargs)
    by_voter = dict(zip([p.name for p in state.players], votes, strict=True))
    state = step(state, Decision(kind="route", speakers=["Ann", "Ben"]))
    state = step(state, Decision(kind="speak", actor="Ann", text="let us vote"))
    assert state.phase == "vote"
    while state.phase == "vote":
        want = pending(state)
        state = step(state, Decision(kind="vote", actor=want.actor, target=by_voter[want.actor]))
    return state


@pytest.mark.parametrize(("votes", "eliminated", "tie"), [
    (["Gus", "Gus", "Gus", "Ann", "Ann", "Ben", "Ann"], None, True),
    (["Gus", "Gus", "Gus", "Ann", "Ann", "Ben", "Cat"], "Gus", False),
    (["Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Ann"], None, True),  # 7-way tie
    (["Fay", "Fay", "Fay", "Fay", "Gus", "Ann", "Ann"], "Fay", False),
])
def test_vote_plurality_and_ties(votes, eliminated, tie):
    """Default tie rule: nobody is eliminated (a documented deviation from the reference)."""
    state = vote_day("WWDTMVV", votes)
    result = state.day_results[-1]
    assert (result.eliminated, result.tie) == (eliminated, tie)
    if eliminated:
        assert not state.player(eliminated).alive
    else:
        assert all(p.alive for p in state.players)
    assert state.phase == "night"


def test_vote_order_is_a_seeded_shuffle_and_excludes_self():
    state = vote_day("WWDTMVV", ["Gus"] * 6 + ["Ann"])
    order = [v.voter for v in state.votes]
    assert sorted(order) == sorted(p.name for p in state.players)
    assert order != [p.name for p in state.players]  # shuffled (fixed by the seed)
    with pytest.raises(IllegalDecision):
        s = table("WWDTMVV", intro=False, max_messages_per_day=1)
        s = step(s, Decision(kind="route", speakers=["Ann", "Ben"]))
        s = step(s, Decision(kind="speak", actor="Ann", text="x"))
        step(s, Decision(kind="vote", actor=pending(s).actor, target=pending(s).actor))


@pytest.mark.parametrize(("alive", "winner"), [
    ("WWDTMVV", None),
    ("WDTMVV", None),
    ("DTMVV", "village"),
    ("WWDV", "werewolves"),     # 2 wolves vs 2 others: parity
    ("WM", "werewolves"),       # the maniac counts with the village: 1 vs 1
    ("WMV", None),
    ("WWDTM", None),            # 2 wolves vs 3 others
    ("V", "village"),
])
def test_victory(alive, winner):
    state = table("WWDTMVVVV")
    for p in state.players:
        p.alive = False
    taken: set[str] = set()
    for letter in alive:
        p = next(p for p in state.players if p.name not in taken and
                 p.role.value[0].upper() == {"W": "W", "D": "D", "T": "D", "M": "M",
                                             "V": "V"}[letter] and
                 (letter != "T" or p.role is Role.DETECTIVE) and
                 (letter != "D" or p.role is Role.DOCTOR))
        p.alive = True
        taken.add(p.name)
    assert winner_of(state) == winner


def test_night_kill_can_end_the_game():
    state = table("WVDTV", rules="simple")
    state.player("Ben").alive = state.player("Dan").alive = False  # wolf, doctor, villager left
    after, _ = play_night(begin_night(state), {"kill": "Eve", "protect": "Cat"})
    assert after.winner == "werewolves" and after.over and pending(after) is None


@pytest.mark.parametrize(("n", "wolves", "match"), [
    (4, 1, "between 5 and 12"),
    (13, 3, "between 5 and 12"),
    (7, 0, "at least 1"),
    (6, 3, "fewer than the other players"),
    (12, 6, "fewer than the other players"),
])
def test_bad_setups_are_rejected_with_clear_errors(n, wolves, match):
    cast = [(f"P{i}", "", "balanced") for i in range(n)]
    with pytest.raises(WerewolfConfigError, match=match):
        new_game(cast, GameConfig(n_players=n, n_wolves=wolves, maniac=True))


def test_duplicate_names_rejected():
    cast = [("Ann", "", "balanced")] * 5
    with pytest.raises(WerewolfConfigError, match="unique"):
        new_game(cast, GameConfig(n_players=5, n_wolves=1))


def test_day_limit_ends_without_winner():
    state = begin_night(table("WWDTMVV", max_days=1))
    after, _ = play_night(state, {"abduct": "Fay", "kill": "Gus", "protect": "Gus",
                                  "investigate": "Ann"})
    assert after.over and after.winner == "none" and "day limit" in after.end_reason


def test_state_roundtrips_through_json():
    state = begin_night(table("WWDTMVV"))
    again = type(state).model_validate_json(state.model_dump_json())
    assert again == state


def test_a_human_line_sends_the_talk_back_to_the_router():
    state = table("WWDTMVV", intro=False, humans=["Cat"])
    state = step(state, Decision(kind="route", speakers=["Cat", "Ann", "Ben"]))
    state = step(state, Decision(kind="speak", actor="Cat", text="Ann, why so quiet?"))
    assert pending(state).kind == "route" and state.turns_today == 1
    state = step(state, Decision(kind="route", speakers=["Ann", "Ben"]))
    state = step(state, Decision(kind="speak", actor="Ann", text="I was thinking."))
    assert pending(state).actor == "Ben"  # a bot's line keeps the picked order


# ---- the reference table (gtsteer/werewolf/engine.py; docs/WEREWOLF.md) ------------------
# roles: Ann Ben Cat Dan Eve Fay Gus = W W D T M V V
BASE = {"abduct": "Fay", "kill": "Gus", "protect": "Cat", "investigate": "Ann"}
RULE_TABLE = [
    # (case id, choices over BASE, deaths under reference, deaths under simple)
    ("abductee-immune-to-the-kill", {"abduct": "Gus"}, [], ["Gus"]),
    ("maniac-dies-abductee-dies", {"kill": "Eve"}, ["Eve", "Fay"], ["Eve"]),
    ("protected-maniac-no-linked-death", {"kill": "Eve", "protect": "Eve"}, [], []),
    ("doctor-one-time-kill", {"protect": "kill:Ann"}, ["Gus", "Ann"], None),
    ("detective-one-time-kill", {"investigate": "kill:Ben"}, ["Gus", "Ben"], None),
    ("one-time-kill-on-abductee-fails", {"abduct": "Ann", "investigate": "kill:Ann"},
     ["Gus"], None),
    ("protection-saves-from-a-one-time-kill", {"protect": "Ben", "investigate": "kill:Ben"},
     ["Gus"], None),
    ("detective-kills-maniac-abductee-follows", {"investigate": "kill:Eve"},
     ["Gus", "Eve", "Fay"], None),
]


@pytest.mark.parametrize("rules", ["reference", "simple"])
@pytest.mark.parametrize(("case", "changes", "reference", "simple"), RULE_TABLE,
                         ids=[c[0] for c in RULE_TABLE])
def test_rule_table(case, changes, reference, simple, rules):
    expected = reference if rules == "reference" else simple
    choices = {**BASE, **changes}
    state = begin_night(table("WWDTMVV", rules=rules))
    if expected is None:  # the action does not exist in this table
        with pytest.raises((IllegalDecision, KeyError)):
            play_night(state, choices)
        return
    after, _ = play_night(state, choices)
    assert after.night_results[-1].killed == expected
    for name in expected:
        assert not after.player(name).alive
    announcement = next(m.text for m in reversed(after.messages) if m.text.startswith("Night"))
    assert all(f"{n} (" in announcement for n in expected)
    causes = {d.name: d.cause for d in after.night_results[-1].deaths}
    if "Fay" in expected and rules == "reference":
        assert causes["Fay"] == "abduction"


def test_investigating_the_abductee_fails_under_reference_only():
    for rules, result, failed in [("reference", None, True), ("simple", "evil", False)]:
        state = begin_night(table("WWDTMVV", rules=rules))
        after, _ = play_night(state, {**BASE, "abduct": "Ann", "investigate": "Ann"})
        inv = next(a for a in after.night_actions if a.verb == "investigate")
        assert (inv.result, inv.failed) == (result, failed), rules


def test_available_actions_and_the_kill_is_one_time():
    state = begin_night(table("WWDTMVVV"))
    seen: dict[str, dict[str, list[str]]] = {}
    while state.phase == "night":
        want = pending(state)
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor, text="x"))
            continue
        seen[want.verb] = want.actions
        pick = {"abduct": ("abduct", "Hal"), "kill": ("kill", "Gus"),
                "protect": ("kill", "Ann"), "investigate": ("investigate", "Ben")}[want.verb]
        state = step(state, Decision(kind="night", actor=want.actor, action=pick[0],
                                     target=pick[1]))
    assert set(seen["protect"]) == {"protect", "kill"}
    assert set(seen["investigate"]) == {"investigate", "kill"}
    assert set(seen["abduct"]) == {"abduct"} and set(seen["kill"]) == {"kill"}
    assert "Cat" in seen["protect"]["protect"] and "Cat" not in seen["protect"]["kill"]
    # night 2: the doctor's kill is spent, the detective's is not
    state = begin_night(finish_summaries(state))
    while (want := pending(state)).verb not in ("protect",):
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor, text="x"))
        else:
            state = step(state, Decision(kind="night", actor=want.actor,
                                         target=want.legal_targets[0]))
    assert set(want.actions) == {"protect"}
    with pytest.raises(IllegalDecision, match="action 'kill'"):
        step(state, Decision(kind="night", actor=want.actor, action="kill",
                             target=want.legal_targets[0]))


@pytest.mark.parametrize(("rules", "repeat_allowed"), [("reference", False), ("simple", True)])
def test_maniac_cannot_abduct_the_same_player_two_nights_running(rules, repeat_allowed):
    state = begin_night(table("WWDTMVVV", rules=rules))
    state, _ = play_night(state, {**BASE, "abduct": "Hal", "kill": "Gus"})
    want = pending(begin_night(finish_summaries(state)))
    assert want.verb == "abduct"
    assert ("Hal" in want.legal_targets) is repeat_allowed
    assert "Eve" not in want.legal_targets  # never self


def test_reference_pack_two_rounds_last_speaker_picks_abducted_wolf_chats():
    state = begin_night(table("WWDTMVV"))
    order = []
    while (want := pending(state)).kind != "night" or want.verb != "kill":
        if want.kind == "pack_chat":
            order.append(want.actor)
            state = step(state, Decision(kind="pack_chat", actor=want.actor, text="x"))
        else:
            state = step(state, Decision(kind="night", actor=want.actor, target="Fay"))
    assert len(order) == 4 and order[:2] == order[2:] and set(order) == {"Ann", "Ben"}
    assert want.actor == order[-1]  # the last wolf to speak picks
    # the last speaker is abducted: it still chats, its mate picks
    last = order[-1]
    state = begin_night(table("WWDTMVV"))
    order = []
    while (want := pending(state)).kind != "night" or want.verb != "kill":
        if want.kind == "pack_chat":
            order.append(want.actor)
            state = step(state, Decision(kind="pack_chat", actor=want.actor, text="x"))
        else:
            state = step(state, Decision(kind="night", actor=want.actor, target=last))
    assert last in order and order.count(last) == 2
    assert want.actor != last and want.actor in ("Ann", "Ben")


def test_random_tie_break_is_seeded_and_picks_a_tied_player():
    votes = ["Gus", "Gus", "Gus", "Ann", "Ann", "Ben", "Ann"]
    outcomes = set()
    for seed in range(6):
        state = vote_day("WWDTMVV", votes, ties="random", seed=seed)
        result = state.day_results[-1]
        assert result.tie and result.tied == ["Ann", "Gus"]
        assert result.eliminated in ("Ann", "Gus") and not state.player(result.eliminated).alive
        assert "random draw" in state.messages[-1].text
        again = vote_day("WWDTMVV", votes, ties="random", seed=seed)
        assert again.day_results[-1].eliminated == result.eliminated
        outcomes.add(result.eliminated)
    assert outcomes == {"Ann", "Gus"}


def test_summaries_close_the_day_then_the_next_day_starts():
    state = begin_night(table("WWDTMVV", humans=["Gus"]))
    after, _ = play_night(state, {**BASE, "kill": "Cat", "protect": "Dan"})
    assert after.phase == "summary" and after.day == 1
    assert "Gus" not in after.queue  # humans write no notes
    while after.phase == "summary":
        after = step(after, Decision(kind="summary", actor=pending(after).actor))
    assert after.day == 2 and after.phase == "discussion" and after.turns_today == 0
    assert {s.day for s in after.summaries} == {1}


@pytest.mark.parametrize(("alive", "expected"), [(7, 28), (5, 21), (12, 46)])
def test_discussion_scales_with_living_players(alive, expected):
    roles = "WWDTMVVVVVVV"[:alive] if alive > 5 else "WDTVV"
    state = table(roles, intro=False)
    assert state.turn_limit() == expected
    assert table(roles, intro=False, max_messages_per_day=4).turn_limit() == 4


def test_pending_for_asks_out_of_turn_what_pending_asks_in_turn(tmp_path):
    """`werewolf act` asks one bot out of turn through `engine.pending_for`, which gives what
    `pending` gives when it is that bot's turn (issue 41 item 6)."""
    from gtsteer.werewolf.engine import pending, pending_for
    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.store import GameStore

    store = GameStore(tmp_path / "p.sqlite")
    asked = []

    def grab(before, _after, _decision) -> None:
        want = pending(before)
        if want.kind in ("vote", "night") or (want.kind == "speak"
                                              and before.phase == "discussion"):
            asked.append((before, want))

    config = GameConfig(n_players=8, max_days=2, max_messages_per_day=3)
    final = GameRunner(store, on_step=grab).run(create_game(store, config, seed=3, game_id="p"))
    assert {w.verb for _, w in asked} >= {None, "abduct", "kill", "protect", "investigate"}
    for before, want in asked:
        assert pending_for(before, want.actor, want.kind) == want
    dead = next(p for p in final.players if not p.alive)
    villager = next(p for p in final.players if p.alive and p.role is Role.VILLAGER)
    with pytest.raises(ValueError, match=f"{dead.name} is dead and takes no actions"):
        pending_for(final, dead.name, "vote")
    with pytest.raises(ValueError, match=f"{villager.name} is a villager and has no night"):
        pending_for(final, villager.name, "night")
    with pytest.raises(ValueError, match="no player 'Nobody'; players: "):
        pending_for(final, "Nobody", "vote")
