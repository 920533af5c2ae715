"""Offer dialogues with known payoffs, for `gtsteer eval reward` on the offer config, and the
labels of hand-labelled ones (`gtsteer eval reward --labelled`).

Each case is two messages over a generated instance, worded as the game's offers are: a menu
offer from the proposer, then an acceptance (valid: plain, or the same trade said back), a
refusal (rejected), or another menu offer made back and left unanswered (incomplete: two
trades named, none agreed). A valid case offers a trade both baskets can pay when the menu has
one, so its payoffs are the trade's values, not the impossible trade's zeros. The truth comes
from `trade_values`, the code the exact utility runs on the trade it reads.
"""

from __future__ import annotations

import random

from gtsteer.binding.domain import AgreementReading
from gtsteer.binding.instances import Instance
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward_cases import Outcome, RewardCase
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains.fruit_offer import (
    Offer,
    agreement_readers,
    amount_text,
    fruits_of,
    menu,
    trade_label,
    trade_of,
)
from gtsteer.domains.fruit_trade import baskets, trade_values
from gtsteer.domains.fruit_trade_cases import RULE, plural

__all__ = ["AGREEMENT", "RULE", "describe_trade", "label_trade", "offer_case"]

PROPOSE = [
    "I'll give you {gives} for {gets}.",
    "How about my {gives} for your {gets}?",
    "Would you give me {gets} if I give you {gives}?",
]
ACCEPT = [
    "Deal, I accept.",
    "Yes, that works for me. Deal!",
    "Agreed: I'll give you {gives} for {gets}.",  # the same trade, said back
]
REJECT = ["No, I reject that offer.", "No thanks, I'd rather keep my fruit.", "No deal."]
COUNTER = [
    "No. I'll give you {gives} for {gets} instead.", "What about my {gives} for your {gets}?",
]


def _say(template: str, offer: Offer) -> str:
    return template.format(gives=amount_text(offer.gives), gets=amount_text(offer.gets))


def _affordable(offer: Offer, owned: list[dict[str, int]]) -> bool:
    """Both baskets can pay: the proposer its `gives`, the responder its `gets`."""
    return (all(owned[0].get(f, 0) >= n for f, n in offer.gives)
            and all(owned[1].get(f, 0) >= n for f, n in offer.gets))


def offer_case(
    spec: DomainSpec, rng: random.Random, instance: Instance, outcome: Outcome
) -> RewardCase:
    owned, values = baskets(instance)
    offers = list(menu(spec).values())
    payable = [o for o in offers if _affordable(o, owned)]
    offer = rng.choice(payable if outcome == "valid" and payable else offers)
    proposal = _say(rng.choice(PROPOSE), offer)
    gives: list[dict[str, int]] | None = None
    if outcome == "valid":
        # The acceptance is the responder's: "gets" and "gives" are its own (the reverse).
        reply, gives = _say(rng.choice(ACCEPT), offer.reversed()), list(trade_of(offer, 0))
    elif outcome == "rejected":
        reply = rng.choice(REJECT)
    else:
        others = [o for o in offers if o not in (offer, offer.reversed())] or [offer.reversed()]
        reply = _say(rng.choice(COUNTER), rng.choice(others))
    transcript = [
        Turn(speaker=0, instruction="any", text=proposal),
        Turn(speaker=1, instruction="any", text=reply),
    ]
    trade = "none" if gives is None else trade_label(instance.names, (gives[0], gives[1]))
    return RewardCase(
        outcome=outcome, instance=instance, transcript=transcript,
        truth=trade_values(owned, values, gives), facts={"deal": gives is not None,
                                                         "trade": trade},
    )


# ---- hand-labelled dialogues (`gtsteer eval reward --labelled`) -------------------------------

FIRST, SECOND = "first", "second"


def _fruit(word: object, fruits: tuple[str, ...]) -> str:
    """A fruit of the config from its singular or plural ("blueberries")."""
    key = str(word).strip().lower()
    for f in fruits:
        if key in (f, plural(f, 2), f + "s"):
            return f
    raise ValueError(f"{word!r} is not one of params.fruits {list(fruits)}")


def _side(value: object, fruits: tuple[str, ...], who: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise ValueError(f"`{who}`: expected fruit: count, e.g. {{apple: 1}}, got {value!r}")
    out: dict[str, int] = {}
    for word, n in value.items():
        fruit = _fruit(word, fruits)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"`{who}`: the count of {word!r} is {n!r}, not a whole number >= 1")
        out[fruit] = out.get(fruit, 0) + n
    return out


def label_trade(spec: DomainSpec, agreed: object, first: int) -> tuple[dict[str, int],
                                                                       dict[str, int]]:
    """A labelled trade, `{first: {fruit: n}, second: {fruit: n}}` (what the first and the
    second speaker give), as who gives what in name order; `first` is the index of the player
    who speaks first."""
    if not isinstance(agreed, dict) or set(agreed) != {FIRST, SECOND}:
        raise ValueError("expected {first: {fruit: n}, second: {fruit: n}} (what the first "
                         f"and the second speaker give) or null, got {agreed!r}")
    fruits = fruits_of(spec)
    sides = _side(agreed[FIRST], fruits, FIRST), _side(agreed[SECOND], fruits, SECOND)
    return sides if first == 0 else (sides[1], sides[0])


def describe_trade(names: list[str], trade: tuple[dict[str, int], dict[str, int]]) -> str:
    """"Alice gives 1 apple and Bob gives 1 kiwi"."""
    return trade_label(names, trade)


#: The offer domain's readings of the agreed trade, for labelled dialogues.
AGREEMENT = AgreementReading(readers=agreement_readers, label=label_trade,
                             describe=describe_trade)
