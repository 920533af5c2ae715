"""The tension experiment's game (docs/TENSION.md, section 2): opposed preferences drawn as the
model-free study draws them, the meeting deal generator, per-turn instruction sets, and the
reading greedy baselines."""

from __future__ import annotations

import random

import pytest
from domain_support import config_dict, spec_of

from gtsteer.binding import ConfigError
from gtsteer.binding.instances import deal_instances, make_instance
from gtsteer.binding.loader import make_game
from gtsteer.binding.tree_size import tree_size
from gtsteer.domains import spec_from_dict
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import (
    ACCEPT,
    COUNTER,
    TAKE,
    meeting_joint_private_info,
    meeting_reply_greedy,
    parse_days,
)
from gtsteer.solvers.evaluate import StrategyError, fixed
from gtsteer.solvers.heldout import greedy_baseline, greedy_instruction
from lab.studies import tension

OPPOSED = "schedule_meeting_opposed"
PREFS = "Monday: 9, Tuesday: 4, Wednesday: 7, Thursday: 2, Friday: 8, Saturday: 1, Sunday: 3"


def _values(info: dict[str, str]) -> tuple[int, ...]:
    prefs = parse_counts(info["day_preferences"])
    return tuple(prefs[d] for d in tension.DAYS)


def _away(info: dict[str, str]) -> frozenset[int]:
    return frozenset(tension.DAYS.index(d) for d in parse_days(info["out_of_office"]))


def test_the_opposed_draw_is_the_tension_studys_draw() -> None:
    spec = spec_of(OPPOSED)
    study = next(c for c in tension.candidates("rational") if c.name == "meeting-opposed-2")
    for seed in range(200):
        proposer, responder = meeting_joint_private_info(spec, random.Random(seed), ["A", "B"])
        p, r = study.draw(random.Random(seed))
        assert (_away(proposer), _values(proposer)) == (p.away, p.values)
        assert (_away(responder), _values(responder)) == (r.away, r.values)


def test_opposed_values_run_against_the_proposers_within_the_noise() -> None:
    spec = spec_of(OPPOSED)
    offsets = set()
    for index in range(100):
        proposer, responder = make_instance(spec, index).private_info
        for v, w in zip(_values(proposer), _values(responder), strict=True):
            assert 1 <= w <= 10
            if 3 <= v <= 8:  # away from the clip, the noise shows whole
                offsets.add(w - (11 - v))
    assert offsets == {-2, -1, 0, 1, 2}


def test_independent_preferences_draw_exactly_as_before() -> None:
    # tests/golden/solve_meeting's instance 0: the joint hook keeps the per-player draws.
    info = make_instance(spec_of("schedule_meeting_dow"), 0).private_info
    assert info[0] == {"out_of_office": "Sunday", "day_preferences":
                       "Monday: 10, Tuesday: 9, Wednesday: 3, Thursday: 1, Friday: 3, "
                       "Saturday: 8, Sunday: 3"}
    assert info[1]["out_of_office"] == "Tuesday, Friday"


def test_an_unknown_preference_rule_is_refused_by_name() -> None:
    data = config_dict(OPPOSED)
    data["params"] = {**data["params"], "preferences": "hostile"}
    with pytest.raises(ConfigError, match="params.preferences"):
        spec_from_dict(data, OPPOSED)


def test_deals_keep_the_proposers_notes_and_draw_the_responders_given_them() -> None:
    spec = spec_of(OPPOSED).with_deals(4)
    deals = deal_instances(spec, make_instance(spec, 5))
    assert [d.private_info[0] for d in deals] == [deals[0].private_info[0]] * 4
    responders = [d.private_info[1] for d in deals]
    assert len({r["day_preferences"] for r in responders}) == 4
    mine = _values(deals[0].private_info[0])
    for r in responders:
        assert all(abs(w - min(10, max(1, 11 - v))) <= 2
                   for v, w in zip(mine, _values(r), strict=True))
    assert deal_instances(spec, make_instance(spec, 5)) == deals  # a pure function


def test_each_message_offers_only_its_turns_instructions() -> None:
    spec = spec_of(OPPOSED)
    game = make_game(spec, make_instance(spec, 0), "fake")
    state = game.new_initial_state()
    seen = []
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(0)
            continue
        labels = [game.instructions()[a] for a in state.legal_actions()]
        seen.append(labels)
        state.apply_action(state.legal_actions()[0])
    assert [len(labels) for labels in seen] == [8, 3, 2]  # three messages, then the end
    # no action sets keys of two turns: 7 days, 2 replies, 1 last message and `any`
    assert len(game.instructions()) == 11 and game.instructions()[game.any_action()] == \
        "day=any|reply=any|last=any"
    assert seen[0][0] == "day=Monday|reply=any|last=any"
    assert seen[1] == [f"day=any|reply={ACCEPT}|last=any",
                       f"day=any|reply={COUNTER}|last=any", "day=any|reply=any|last=any"]
    assert seen[2] == [f"day=any|reply=any|last={TAKE}", "day=any|reply=any|last=any"]
    assert state.turns[0].instruction == "day=Monday|reply=any|last=any"


def test_the_tree_size_counts_each_turns_instructions() -> None:
    size = tree_size(spec_of(OPPOSED, num_llm_seeds=[8, 2, 2]))  # section 2's samples
    # 8 openings x 8 samples, 3 replies x 2, 2 last messages x 2
    assert size.terminal_nodes == 8 * 8 * 3 * 2 * 2 * 2
    assert size.message_calls == 8 * 8 + 8 * 8 * 3 * 2 + 8 * 8 * 3 * 2 * 2 * 2
    spec = spec_of(OPPOSED, num_llm_seeds=[2, 1, 1])
    game = make_game(spec, make_instance(spec, 0), "fake")
    terminals, stack = 0, [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            terminals += 1
            continue
        actions = ([a for a, _ in state.chance_outcomes()] if state.is_chance_node()
                   else state.legal_actions())
        stack += [state.child(a) for a in actions]
    assert terminals == tree_size(spec).terminal_nodes == 8 * 2 * 3 * 2


@pytest.mark.parametrize(("turns", "message"), [
    ([["day"], ["answer"]], "turns.1: `answer` is not an action key"),
    ([["day"], ["reply"], ["last"], ["day"], ["reply"]], "turns: 5 messages"),
])
def test_bad_turns_are_refused_by_name(turns: list[list[str]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        spec_of(OPPOSED, turns=turns)


def test_the_reading_greedy_responder_accepts_a_near_best_free_day_else_counters() -> None:
    spec = spec_of(OPPOSED)
    info = {"out_of_office": "Friday", "day_preferences": PREFS}  # best free day: Monday (9)
    reply = lambda text: meeting_reply_greedy(spec, info, [text])["reply"]  # noqa: E731
    assert reply("How about Wednesday?") == ACCEPT  # 7 >= 9 - 2
    assert reply("Let's meet on Tuesday.") == COUNTER  # 4 < 7
    assert reply("Friday suits me.") == COUNTER  # worth 8, but away
    assert reply("Any day is fine.") == COUNTER  # nothing proposed
    assert reply("Not Tuesday; Wednesday?") == COUNTER  # the first day named is the proposal
    # The proposer's last message takes a counter-proposal of a day it can attend.
    assert meeting_reply_greedy(spec, info, ["Hi", "Thursday instead?"])["last"] == TAKE
    assert meeting_reply_greedy(spec, info, ["Hi", "Friday instead?"])["last"] == "any"


def test_the_greedy_baseline_plays_the_reading_reply_at_the_responders_turn() -> None:
    spec = spec_of(OPPOSED)
    instance = make_instance(spec, 2)
    game = make_game(spec, instance, "fake")
    greedy = greedy_baseline(game)
    assert greedy is not None
    state = game.new_initial_state()
    (opening, _), = greedy(state)
    state.apply_action(opening)
    day = game.instructions()[opening].split("|")[0].removeprefix("day=")
    state.apply_message(f"Shall we meet on {day}?")
    (reply, p), = greedy(state)
    wanted = meeting_reply_greedy(spec, instance.private_info[1], [f"Shall we meet on {day}?"])
    assert p == 1.0 and game.instructions()[reply] == f"day=any|reply={wanted['reply']}|last=any"
    assert reply in state.legal_actions()


def test_an_always_row_plays_its_fallback_where_its_instruction_is_not_offered() -> None:
    spec = spec_of(OPPOSED)
    game = make_game(spec, make_instance(spec, 0), "fake")
    monday, any_ = 0, game.any_action()
    state = game.new_initial_state()
    state.apply_action(monday)
    state.apply_action(0)
    assert fixed([monday, monday], otherwise=[any_, any_])(state) == [(any_, 1.0)]
    with pytest.raises(StrategyError, match="not legal"):
        fixed([monday, monday])(state)


def test_the_shipped_meetings_greedy_responder_reads_the_proposal() -> None:
    # Issue 57 item 4: in the shipped meeting (one `day` key) the reading responder agrees by
    # proposing the day it was offered when that day is free and near its best, else its own
    # best free day; before, it named its best day whatever it read (text-blind).
    spec = spec_of("schedule_meeting_dow")
    info = {"out_of_office": "Friday", "day_preferences": PREFS}  # best free day: Monday (9)
    assert greedy_instruction(spec, info, ["How about Wednesday?"], 1) == "Wednesday"  # 7 >= 7
    assert greedy_instruction(spec, info, ["Let's meet on Tuesday."], 1) == "Monday"  # 4 < 7
    assert greedy_instruction(spec, info, ["Friday suits me."], 1) == "Monday"  # away
    assert greedy_instruction(spec, info, [], 0) == "Monday"  # the opening reads nothing
