"""Offer dialogues with known payoffs, for `gtsteer eval reward` on the offer config.

Each case is two messages over a generated instance, worded as the game's offers are: a menu
offer from the proposer, then an acceptance (valid: plain, or the same trade said back), a
refusal (rejected), or another menu offer made back and left unanswered (incomplete: two
trades named, none agreed). A valid case offers a trade both baskets can pay when the menu has
one, so its payoffs are the trade's values, not the impossible trade's zeros. The truth comes
from `trade_values`, the code the exact utility runs on the trade it reads.
"""

from __future__ import annotations

import random

from gtsteer.binding.instances import Instance
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward_cases import Outcome, RewardCase
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains.fruit_offer import Offer, amount_text, menu, trade_label, trade_of
from gtsteer.domains.fruit_trade import baskets, trade_values
from gtsteer.domains.fruit_trade_cases import RULE

__all__ = ["RULE", "offer_case"]

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
