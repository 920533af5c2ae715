"""Meeting-scheduling dialogues with known payoffs, for `gtsteer eval reward`.

Each case is two messages over a generated instance: a day proposal, then an acceptance (valid),
a refusal (rejected) or another day proposed back and left unanswered (incomplete). The truth
comes from `meeting_values`, the same code the exact utility runs on an extracted day. A valid
case proposes a day neither player is away when there is one, so its payoffs are the players'
preferences (the paper's deals "consistent with private information").
"""

from __future__ import annotations

import random

from gtsteer.binding.instances import Instance
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward_cases import Outcome, RewardCase
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import (
    NO_DAY,
    OUT_OF_OFFICE,
    PREFERENCES,
    days_of,
    meeting_values,
    parse_days,
)

RULE = """
Each person's payoff is their own preference value for the day both agreed on. It is 0 for
both when they agreed on no day, or when the agreed day is an out-of-office day of either
person (the meeting cannot take place).
"""

PROPOSE = [
    "How about we meet on {day}?", "Let's meet on {day}.", "I suggest {day} for the meeting.",
]
ACCEPT = ["Yes, {day} works for me. See you then!", "Agreed, {day} it is."]
REJECT = ["No, I can't agree to that, and I don't want to meet this week.", "No. Let's not meet."]
COUNTER = ["{day} is bad for me. What about {other}?", "Could we do {other} instead?"]
UNDECIDED = "I'm not sure about {day} yet; let me check and get back to you."  # a one-day week


def meeting_case(
    spec: DomainSpec, rng: random.Random, instance: Instance, outcome: Outcome
) -> RewardCase:
    days = days_of(spec)
    away = [parse_days(info[OUT_OF_OFFICE]) for info in instance.private_info]
    prefs = [parse_counts(info[PREFERENCES]) for info in instance.private_info]
    free = [d for d in days if all(d not in out for out in away)]
    day = rng.choice(free or days)
    proposal = rng.choice(PROPOSE).format(day=day)
    if outcome == "valid":
        reply, agreed = rng.choice(ACCEPT).format(day=day), day
    elif outcome == "rejected":
        reply, agreed = rng.choice(REJECT), None
    else:
        others = [d for d in days if d != day]
        counter = rng.choice(COUNTER) if others else UNDECIDED
        reply = counter.format(day=day, other=rng.choice(others) if others else day)
        agreed = None
    transcript = [
        Turn(speaker=0, instruction="any", text=proposal),
        Turn(speaker=1, instruction="any", text=reply),
    ]
    # `facts` has the utility's extraction fields, so a report shows what a right answer reads.
    return RewardCase(
        outcome=outcome, instance=instance, transcript=transcript,
        truth=meeting_values(agreed, away, prefs),
        facts={"agreed": agreed is not None, "day": agreed or NO_DAY},
    )
