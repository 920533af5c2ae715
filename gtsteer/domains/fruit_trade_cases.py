"""Fruit-trading dialogues with known payoffs, for `gtsteer eval reward`.

Each case is two messages over a generated instance: a proposal, then an acceptance (valid), a
refusal (rejected) or a counter-offer left unanswered (incomplete). The truth comes from
`trade_values`, the same code the exact utility runs on an extracted trade.
"""

from __future__ import annotations

import random

from gtsteer.binding.instances import Instance
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward_cases import Outcome, RewardCase
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains.fruit_trade import OWNED, VALUES, fruits_of, parse_counts, trade_values

RULE = """
Each person's payoff is the value, by their own fruit values, of the fruit they receive minus
the value of the fruit they give away. Without an agreed trade both payoffs are 0.
"""

ACCEPT = ["Deal, I accept.", "Yes, that works for me. Deal!", "Agreed, let's trade."]
REJECT = ["No, I reject that offer.", "No thanks, I'd rather keep my fruit.", "No deal."]
COUNTER = ["What if you gave me {n} {fruit} instead?", "Could you add {n} {fruit} to that?"]


def plural(fruit: str, n: int) -> str:
    if n == 1:
        return fruit
    return fruit[:-1] + "ies" if fruit.endswith("y") and fruit[-2] not in "aeiou" else fruit + "s"


def _amount(counts: dict[str, int]) -> str:
    return " and ".join(f"{n} {plural(f, n)}" for f, n in counts.items())


def _side(rng: random.Random, owned: dict[str, int], avoid: set[str]) -> dict[str, int]:
    """One or two units of one fruit the player owns (another fruit than `avoid` if possible)."""
    have = [f for f, n in owned.items() if n > 0]
    pick = [f for f in have if f not in avoid] or have
    fruit = rng.choice(pick)
    return {fruit: rng.randint(1, min(2, owned[fruit]))}


def fruit_case(
    spec: DomainSpec, rng: random.Random, instance: Instance, outcome: Outcome
) -> RewardCase:
    owned = [parse_counts(info[OWNED]) for info in instance.private_info]
    values = [parse_counts(info[VALUES]) for info in instance.private_info]
    gives0 = _side(rng, owned[0], set())
    gives1 = _side(rng, owned[1], set(gives0))
    proposal = f"I'll give you {_amount(gives0)} for {_amount(gives1)}."
    if outcome == "valid":
        reply, gives = rng.choice(ACCEPT), [gives0, gives1]
    elif outcome == "rejected":
        reply, gives = rng.choice(REJECT), None
    else:
        other = rng.choice([f for f in fruits_of(spec) if f not in gives1] or fruits_of(spec))
        n = rng.randint(1, 3)
        reply, gives = rng.choice(COUNTER).format(n=n, fruit=plural(other, n)), None
    transcript = [
        Turn(speaker=0, instruction="any", text=proposal),
        Turn(speaker=1, instruction="any", text=reply),
    ]
    names = instance.names
    facts = {"deal": gives is not None}
    if gives is not None:
        facts.update({f"{names[p]}_gives": gives[p] for p in range(2)})
    return RewardCase(
        outcome=outcome, instance=instance, transcript=transcript,
        truth=trade_values(owned, values, gives), facts=facts,
    )
