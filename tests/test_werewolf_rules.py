"""Rules as tables of cases: night resolution, doctor limits, detective reads, ties, victory."""

from __future__ import annotations

import pytest
from werewolf_helpers import table

from gtsteer.werewolf.engine import (
    IllegalDecision,
    begin_night,
    new_game,
    pending,
    step,
    winner_of,
)
from gtsteer.werewolf.rules import Role, WerewolfConfigError
from gtsteer.werewolf.state import Decision


def play_night(state, choices: dict[str, str]):
    """Answer every pending night decision from `choices` (verb -> target)."""
    asked: list[str] = []
    while state.phase == "night":
        want = pending(state)
        if want.kind == "pack_chat":
            state = step(state, Decision(kind="pack_chat", actor=want.actor, text="hm"))
            continue
        asked.append(want.verb)
        state = step(state, Decision(kind="night", actor=want.actor, target=choices[want.verb]))
    return state, asked


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


@pytest.mark.parametrize(("roles", "choices", "killed", "asked"), NIGHT_CASES)
def test_night_resolution(roles, choices, killed, asked):
    state = begin_night(table(roles))
    after, seen = play_night(state, choices)
    assert seen == asked
    assert after.night_results[-1].killed == killed
    assert after.day == 2
    if killed:
        assert not after.player(killed).alive and after.player(killed).cause == "night"
        assert f"{killed} (" in after.messages[-1].text
    else:
        assert "nobody died" in after.messages[-1].text
    blocked = [a.actor for a in after.night_actions if a.blocked]
    abducted = choices.get("abduct")
    if abducted and after.player(abducted).role in (Role.DOCTOR, Role.DETECTIVE):
        assert blocked == [abducted]


def test_abducted_wolf_leader_is_replaced_by_pack_mate():
    state = begin_night(table("WWDTMVV"))
    after, _ = play_night(state, {"abduct": "Ann", "kill": "Gus", "protect": "Cat",
                                  "investigate": "Eve"})
    kill = next(a for a in after.night_actions if a.verb == "kill")
    assert kill.actor == "Ben" and set(kill.observers) == {"Ann", "Ben"}
    # the abducted wolf sat out the pack chat as well
    assert [m.author for m in after.messages if m.channel == "pack"] == ["Ben"]


@pytest.mark.parametrize(("target", "reading"), [
    ("Ann", "evil"), ("Eve", "evil"), ("Fay", "good"), ("Cat", "good")])
def test_detective_reads_maniac_and_wolves_as_evil(target, reading):
    state = begin_night(table("WWDTMVV"))
    after, _ = play_night(state, {"abduct": "Gus", "kill": "Gus", "protect": "Cat",
                                  "investigate": target})
    inv = next(a for a in after.night_actions if a.verb == "investigate")
    assert (inv.target, inv.result, inv.observers) == (target, reading, ["Dan"])
    abduct = next(a for a in after.night_actions if a.verb == "abduct")
    assert abduct.observers == ["Eve"]  # the abducted player is told, but not by whom


def _night_two_protect_targets(first_protect: str, abduct_doctor_n1: bool) -> list[str]:
    state = begin_night(table("WWDTMVVV"))
    state, _ = play_night(state, {"abduct": "Cat" if abduct_doctor_n1 else "Gus",
                                  "kill": "Hal", "protect": first_protect, "investigate": "Ann"})
    state = begin_night(state)
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


def vote_day(roles: str, votes: list[str]):
    """Everyone votes in the engine's order; votes[i] is the target of the i-th living seat."""
    state = table(roles, intro=False, max_messages_per_day=1)
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
    state = table("WVDTV")
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
        new_game(cast, n_wolves=wolves, maniac=True)


def test_duplicate_names_rejected():
    cast = [("Ann", "", "balanced")] * 5
    with pytest.raises(WerewolfConfigError, match="unique"):
        new_game(cast, n_wolves=1)


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
