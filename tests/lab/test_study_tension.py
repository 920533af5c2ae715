"""The model-free tension study (lab/studies/tension.py): its games agree with the domains'
own code, and its best response finds the tension where, and only where, it is built in."""

from __future__ import annotations

import random

from gtsteer.domains import load_spec
from gtsteer.domains.fruit_offer import offer_greedy as domain_offer_greedy
from gtsteer.domains.fruit_trade import render_counts
from gtsteer.domains.schedule_meeting import meeting_greedy, render_days
from lab.studies import tension


def _meeting_info(m: tension.Meeting) -> dict[str, str]:
    return {"out_of_office": render_days([tension.DAYS[d] for d in sorted(m.away)]),
            "day_preferences": render_counts(dict(zip(tension.DAYS, m.values, strict=True)))}


def test_greedy_openings_are_the_domains_own_greedy_hooks() -> None:
    meeting = load_spec("configs/schedule_meeting_dow.yaml")
    fruit = load_spec("configs/trade_fruit_offer.yaml")
    menu = fruit.actions["offer"]
    rng = random.Random(3)
    for _ in range(200):
        m = tension.draw_meeting(rng)
        assert meeting_greedy(meeting, _meeting_info(m)) == {"day": tension.DAYS[m.best_free()]}
        b = tension.draw_basket(rng)
        info = {"fruits_owned": render_counts(b.owned), "fruit_values": render_counts(b.values)}
        assert domain_offer_greedy(fruit, info) == {"offer": menu[tension.offer_greedy(b)]}


def test_a_day_either_player_is_away_pays_nothing() -> None:
    p = tension.Meeting(frozenset({0}), (9, 8, 1, 1, 1, 1, 1))
    r = tension.Meeting(frozenset({1}), (1, 1, 1, 1, 1, 1, 1))
    assert [tension.meeting_payoff(p, r, d) for d in (0, 1, 2)] == [0.0, 0.0, 1.0]


def test_opposed_two_reply_meeting_rewards_a_compromise_over_greedy() -> None:
    # The proposer loves Monday, which the responder (opposed) hates: greedy is countered and the
    # proposer ends on the responder's best day, worth 1 to it; a middling day is accepted.
    p = tension.Meeting(frozenset({6}), (10, 6, 5, 1, 1, 1, 1))
    r = tension.Meeting(frozenset({5}), (1, 5, 8, 10, 10, 10, 10))
    play = tension.meeting_play(replies=2, style="rational")
    assert play(p, r, 0) == 1.0  # countered with Thursday (its earliest best), taken
    assert play(p, r, 2) == 5.0  # Wednesday: 8 >= 0.79 * 10, accepted
    # With one reply a counter is never answered: the rational responder takes any free day.
    assert tension.meeting_play(replies=1, style="rational")(p, r, 0) == 10.0


def test_the_shortfall_is_zero_without_tension_and_positive_with_it() -> None:
    rows = {c.name: tension.shortfall(c, 300, 300, 0, "rational")
            for c in tension.candidates("rational")}
    # Uniform away days and one reply: every day is equally likely to be free for the responder,
    # so the best response is greedy's day up to belief noise.
    assert abs(rows["meeting"].mean) < 0.3
    # Opposed values and a second exchange: the compromise pays, clearly.
    opposed = rows["meeting-opposed-2"]
    assert opposed.mean > 0.3 and opposed.differs > 0.1


def test_power_helpers_match_the_textbook_formula() -> None:
    # n = ((1.96 + 0.8416) * sd / effect) ** 2
    assert round(tension.n_for_power(0.5, 2.0)) == 126
    assert abs(tension.power_at(126, 0.5, 2.0) - 0.8) < 0.01
    assert tension.n_for_power(0.0, 1.0) == float("inf")
