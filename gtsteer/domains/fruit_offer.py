"""Fruit trading steered by the offer itself (gtsteer/configs/trade_fruit_offer.yaml;
docs/DOMAINS.md, "Fruit trading by offer", has the measurements behind the choices below).

The tone config's instructions are followed by no embedded model, and its JSON reader finds
no trade in nearly every dialogue (issue 40). Here each action is a concrete offer from a
small static menu ("1 apple for 2 bananas": the speaker gives one apple and asks two bananas),
so whether a message follows its instruction is a matter of reading counts and fruit words
(`read_offers`, exact), and the trade a dialogue agreed on is one of the offers its messages
name. The utility is fruit trading's exact values and bounds; the agreed trade is read in code
(`read_agreement`, `exact`, the default) or by the reward LLM's calibrated questions (`ask`:
SmolLM2, the default reward model, never reads a yes, so every terminal would pay 0). A
dialogue that makes no exact offer pays nothing under either reading.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import field_validator

from gtsteer.binding.domain import AgreementReader
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward import RewardContext
from gtsteer.binding.spec import ANY, DomainSpec, check_reward_fields
from gtsteer.domains.agreement import agreed_label
from gtsteer.domains.fruit_accept import says_no, says_yes
from gtsteer.domains.fruit_trade import (
    OWNED,
    VALUES,
    FruitParams,
    baskets,
    check_fruit_spec,
    parse_counts,
    trade_values,
)
from gtsteer.domains.fruit_trade_cases import plural

DOMAIN = "fruit_offer"
#: The action key whose values are offers.
OFFER_KEY = "offer"
#: Which trade, once the reward prompt has said that both accepted one (`params.offer_prompt`).
OFFER_PROMPT = """{players} trade fruit.
{transcript}

Which trade did both {players} accept?
Answer:"""

#: `params.agreement`: read the accepted trade in code, or ask the reward LLM.
Reading = Literal["exact", "ask"]
EXACT: Reading = "exact"
ASK: Reading = "ask"
READINGS: tuple[Reading, ...] = (EXACT, ASK)

GIVE, GET = "give", "get"
#: A side of an offer: (fruit, count) pairs, sorted by fruit.
Side = tuple[tuple[str, int], ...]


class OfferParams(FruitParams):
    """`params` of an offer config: fruit trading's, how the agreed trade is read, and the
    which-trade question of the `ask` reading."""

    #: How the trade both accepted is read: `exact` in code (`read_agreement`), or `ask`, the
    #: reward LLM's calibrated questions (`agreement.agreed_label`). See the module docstring.
    agreement: Reading = EXACT
    #: Which trade, once both accepted one (asked over the trades the messages name; `ask`).
    offer_prompt: str = OFFER_PROMPT

    @field_validator("agreement", mode="before")
    @classmethod
    def _agreement(cls, v: object) -> object:
        if v not in READINGS:
            raise ValueError(f"must be `{EXACT}` (the trade both accepted, read in code) or "
                             f"`{ASK}` (the reward LLM's calibrated yes/no and which-trade "
                             f"questions), got {v!r}")
        return v

    @field_validator("offer_prompt")
    @classmethod
    def _offer_prompt(cls, v: str) -> str:
        return check_reward_fields(v)


@dataclass(frozen=True)
class Offer:
    """One offer, from its speaker's side: what the speaker `gives`, what it `gets`."""

    gives: Side
    gets: Side

    def reversed(self) -> Offer:
        """The same trade said by the other player."""
        return Offer(self.gets, self.gives)

    def text(self) -> str:
        """"1 apple for 2 bananas" (the menu's own wording)."""
        return f"{amount_text(self.gives)} for {amount_text(self.gets)}"


def amount_text(side: Side) -> str:
    return " and ".join(f"{n} {plural(f, n)}" for f, n in side)


# ---- reading offers in messages ---------------------------------------------------------------

_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a single": 1, "single": 1, "a": 1, "an": 1,
            "a couple of": 2, "a pair of": 2}
_COUNT = "|".join([r"\d+", *sorted((r"\s+".join(map(re.escape, w.split())) for w in _NUMBERS),
                                   key=len, reverse=True)])
_POSSESSIVE = {"my": GIVE, "mine": GIVE, "your": GET, "yours": GET}
#: Between two amounts of one side ("1 apple and 2 kiwis").
_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+|plus\s+)?|and|&|plus|as\s+well\s+as)\s*", re.IGNORECASE)
#: Between the two sides of "X for Y": the second side is the other direction.
_FOR = re.compile(r"\s*,?\s*(?:(?:in\s+(?:exchange|return|trade)\s+)?for|in\s+exchange\s+for"
                  r"|for\s+(?:just|only))\s*", re.IGNORECASE)
#: "for" right after an amount (an "X for Y" begins there).
_FOR_NEXT = re.compile(r"\s*,?\s*(?:in\s+(?:exchange|return|trade)\s+)?for\b")
_GIVING = r"give|offer|trade|swap|exchange|hand|sell|send|spare|part\s+with"
_TAKING = r"like|want|need|take|get|accept|have|receive"
#: Cues before a side, each with the direction it gives that side from the speaker's side;
#: the cue ending last wins (the longer one on a tie): "would you like" (the listener takes, so
#: the speaker gives), "give me" (the speaker gets), "I'll give you", "I want", "your offer of".
_CUES = [
    (re.compile(rf"\byou(?:'ll|'d)?\s+(?:[\w']+\s+){{0,3}}?(?:{_GIVING})\b"), GET),
    (re.compile(r"\b(?:give|hand|send|pass|get|bring|trade|swap|sell|offer)\s+me\b"), GET),
    (re.compile(rf"\byou(?:'ll|'d)?\s+(?:[\w']+\s+){{0,3}}?(?:{_TAKING})\b"), GIVE),
    (re.compile(rf"\b(?:{_GIVING}|give\s+up)\b"), GIVE),
    # Whose offer is quoted: "I accept your offer of 1 apple for ..." (the listener gives it).
    (re.compile(r"\byour\s+(?:offer|proposal|deal)(?:\s+of)?"), GET),
    (re.compile(r"\bmy\s+(?:offer|proposal|deal)(?:\s+of)?"), GIVE),
    (re.compile(r"\b(?:want|need|like|take|get|receive|buy|accept|(?:ask|asking|looking|hoping)"
                r"\s+for|in\s+return|(?:can|could|may|might)\s+i\s+have)\b"), GET),
]
#: After a side, whose fruit it is: "two blueberries from me, one kiwi from you".
_FROM = re.compile(r"\s*from\s+(me|you)\b")
#: A clause that refuses rather than makes an offer ("I won't give you ...") ...
_NEGATION = re.compile(r"\b(?:not|never|cannot)\b|n't\b")
#: ... except in a proposal ("why don't we", "wouldn't you like").
_NOT_NEGATION = re.compile(r"\bwhy\s+(?:don't|not)\b|\b\w+n't\s+you\b")
#: A side named only to be set aside ("instead of 1 apple for 2 bananas, ...").
_SET_ASIDE = re.compile(r"(?:instead\s+of|rather\s+than|other\s+than)\s*$")


@lru_cache(maxsize=16)
def _amount_pattern(fruits: tuple[str, ...]) -> re.Pattern[str]:
    forms = sorted({form for f in fruits for form in (f, plural(f, 2), f + "s")},
                   key=len, reverse=True)
    words = "|".join(re.escape(f) for f in forms)
    return re.compile(
        rf"\b(?:(?P<pos1>my|your|the|these|those)\s+)?(?:(?P<count>{_COUNT})\s+)?"
        rf"(?:(?:of\s+)?(?P<pos2>my|your|the)\s+)?(?P<fruit>{words})\b",
        re.IGNORECASE,
    )


@dataclass
class _Side:
    start: int
    end: int
    amounts: list[tuple[str, int | None]]
    possessive: str | None  # GIVE / GET from "my" / "your"


def _fruit_of(word: str, fruits: tuple[str, ...]) -> tuple[str, bool]:
    """(the fruit, whether the word is its singular) of a matched fruit word."""
    word = word.lower()
    for f in fruits:
        if word == f:
            return f, True
    for f in fruits:
        if word in (plural(f, 2), f + "s"):
            return f, False
    raise ValueError(word)  # the pattern only matches these forms


def _count(text: str | None, singular: bool) -> int | None:
    """A count word or digits; no count: one for a singular noun ("my apple"), unknown for a
    plural one ("some apples")."""
    if text is None:
        return 1 if singular else None
    key = " ".join(text.lower().split())
    return int(key) if key.isdigit() else _NUMBERS[key]


def _sides(text: str, fruits: tuple[str, ...]) -> list[_Side]:
    """The amounts `text` names, joined into sides where only "and" or a comma parts them;
    except that an amount followed by "for" after the second side of an "X for Y" starts a new
    offer ("1 apple for 2 bananas and 1 kiwi for 2 blueberries": two offers)."""
    sides: list[_Side] = []
    for m in _amount_pattern(fruits).finditer(text):
        fruit, singular = _fruit_of(m.group("fruit"), fruits)
        amount = (fruit, _count(m.group("count"), singular))
        owner = (m.group("pos1") or m.group("pos2") or "").lower()
        role = _POSSESSIVE.get(owner)
        second = len(sides) > 1 and bool(_FOR.fullmatch(text[sides[-2].end:sides[-1].start]))
        if (sides and _JOIN.fullmatch(text[sides[-1].end:m.start()])
                and not (second and _FOR_NEXT.match(text, m.end()))):
            last = sides[-1]
            last.amounts.append(amount)
            last.end, last.possessive = m.end(), last.possessive or role
        else:
            sides.append(_Side(m.start(), m.end(), [amount], role))
    return sides


def _cue(lead: str) -> str | None:
    """The direction the words before a side give it (see `_CUES`), or None."""
    best: tuple[int, int, str] | None = None
    for pattern, role in _CUES:
        for m in pattern.finditer(lead):
            key = (m.end(), m.end() - m.start(), role)
            if best is None or key[:2] > best[:2]:
                best = key
    return None if best is None else best[2]


def _source(text: str, end: int) -> str | None:
    """GIVE / GET from "from me" / "from you" right after a side, or None."""
    m = _FROM.match(text, end)
    return None if m is None else (GIVE if m.group(1) == "me" else GET)


def _refused(lead: str) -> bool:
    """Whether the clause before an offer refuses it or sets it aside."""
    clause = re.split(r"[.!?;]|\bbut\b", lead)[-1]
    if _SET_ASIDE.search(clause):
        return True
    return bool(_NEGATION.search(_NOT_NEGATION.sub(" ", clause)))


def _exact(side: _Side) -> Side | None:
    counts: Counter[str] = Counter()
    for fruit, n in side.amounts:
        if n is None or n <= 0:
            return None
        counts[fruit] += n
    return tuple(sorted(counts.items()))


def read_offers(text: str, fruits: list[str] | tuple[str, ...]) -> list[Offer]:
    """Every exact offer `text` makes, in order, from its speaker's side.

    An offer is two sides in opposite directions: "1 apple for 2 bananas" (the speaker gives
    the first side unless a cue says otherwise), "my kiwi for two of your blueberries", "can I
    get 2 bananas for 1 apple?" (gets the first), "I'll give you an apple if you give me two
    bananas". Counts are digits or number words; a singular noun without one is one fruit, a
    plural one ("some apples") is no exact offer. Offers in a clause that refuses them ("I
    won't give you ...") or sets them aside ("instead of ...") are not made."""
    fruits = tuple(fruits)
    lowered = text.lower().replace("\u2019", "'")  # a chat model's curly apostrophe
    sides = _sides(lowered, fruits)
    leads = [lowered[(sides[i - 1].end if i else 0):s.start] for i, s in enumerate(sides)]
    joined = [i > 0 and bool(_FOR.fullmatch(lead)) for i, lead in enumerate(leads)]
    roles = [s.possessive or _source(lowered, s.end) or (None if joined[i] else _cue(leads[i]))
             for i, s in enumerate(sides)]
    for i in range(1, len(sides)):
        if not joined[i]:
            continue
        a, b = roles[i - 1], roles[i]
        if a is None and b is None:
            roles[i - 1], roles[i] = GIVE, GET
        elif b is None:
            roles[i] = GET if a == GIVE else GIVE
        elif a is None:
            roles[i - 1] = GET if b == GIVE else GIVE
    offers: list[Offer] = []
    i = 0
    while i < len(sides) - 1:
        a, b = roles[i], roles[i + 1]
        if a is not None and b is not None and a != b and not _refused(leads[i]):
            first, second = _exact(sides[i]), _exact(sides[i + 1])
            if first and second and not {f for f, _ in first} & {f for f, _ in second}:
                offers.append(Offer(first, second) if a == GIVE else Offer(second, first))
            i += 2
        else:
            i += 2 if joined[i + 1] else 1
    return offers


# ---- the menu ---------------------------------------------------------------------------------


def fruits_of(spec: DomainSpec) -> tuple[str, ...]:
    return tuple(OfferParams.of(spec).fruits)


def menu(spec: DomainSpec) -> dict[str, Offer]:
    """The config's offers (`actions.offer` without `any`) that read as one offer; PSRO's
    free-text additions that do not are left out."""
    fruits = fruits_of(spec)
    out = {}
    for value in spec.actions.get(OFFER_KEY, []):
        offers = read_offers(value, fruits) if value != ANY else []
        if len(offers) == 1:
            out[value] = offers[0]
    return out


def offer_message_value(spec: DomainSpec, key: str, message: str) -> str | None:
    """The menu offer the message makes (its first exact offer, when that is on the menu), or
    None: the domain's `parse_message`, an exact steering classifier."""
    if key != OFFER_KEY:
        return None
    made = read_offers(message, fruits_of(spec))
    if not made:
        return None
    return next((v for v, o in menu(spec).items() if o == made[0]), None)


def offer_greedy(spec: DomainSpec, info: dict[str, str]) -> dict[str, str]:
    """The offer a person would make without a solver: of the menu offers its basket can pay
    for, the one worth most by its own values (what it gets minus what it gives); the earliest
    on the menu on a tie. With none affordable, the most valuable offer at all."""
    owned, values = parse_counts(info[OWNED]), parse_counts(info[VALUES])
    offers = list(menu(spec).items())

    def worth(offer: Offer) -> int:
        return (sum(values.get(f, 0) * n for f, n in offer.gets)
                - sum(values.get(f, 0) * n for f, n in offer.gives))

    def affordable(offer: Offer) -> bool:
        return all(owned.get(f, 0) >= n for f, n in offer.gives)

    best = max(range(len(offers)), key=lambda i: (affordable(offers[i][1]), worth(offers[i][1]),
                                                  -i))
    return {OFFER_KEY: offers[best][0]}


def check_offer_spec(spec: DomainSpec) -> None:
    """Two players, and an `offer` key whose written values each read as one offer of the
    config's fruits (counts within `max_count`), no two the same."""
    check_fruit_spec(spec)
    params = OfferParams.of(spec)
    if OFFER_KEY not in spec.actions:
        raise DomainCheckError("actions", f"needs an `{OFFER_KEY}` key (the offer menu)")
    grown = {v for k, v in spec.grown if k == OFFER_KEY}
    seen: dict[Offer, str] = {}
    for value in spec.actions[OFFER_KEY]:
        if value == ANY or value in grown:
            continue
        offers = read_offers(value, params.fruits)
        if len(offers) != 1:
            raise DomainCheckError(f"actions.{OFFER_KEY}", f"{value!r} is not one offer of "
                                   f"{params.fruits} with counts (e.g. '1 apple for 2 bananas')")
        offer = offers[0]
        if any(n > params.max_count for _, n in (*offer.gives, *offer.gets)):
            raise DomainCheckError(f"actions.{OFFER_KEY}",
                                   f"{value!r} counts more than params.max_count")
        if offer in seen:
            raise DomainCheckError(f"actions.{OFFER_KEY}", f"{value!r} is {seen[offer]!r} again")
        seen[offer] = value


# ---- reading the agreement ------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """An accepted offer: `offer` as its `speaker` made it, accepted in message `accepted_at`."""

    speaker: int
    offer: Offer
    accepted_at: int

    def trade(self) -> tuple[dict[str, int], dict[str, int]]:
        """What each of the two players hands over."""
        return trade_of(self.offer, self.speaker)


@dataclass(frozen=True)
class _Pending:
    """The offers of the latest message that made any, and who made them."""

    speaker: int
    offers: tuple[Offer, ...]


def _taken(pending: _Pending, made: list[Offer], text: str,
           fruits: tuple[str, ...]) -> Offer | None:
    """The pending offer this message (by the other player) accepts, or None."""
    if says_no(text):
        return None
    # (a) The same trade from its own side: "I'll give you 1 kiwi for 1 apple" takes "1 apple
    # for 1 kiwi" (any of the alternatives the latest offering message put on the table).
    said_back = [o for o in pending.offers if o.reversed() in made]
    if said_back:
        return said_back[-1]
    # (b) A yes, with no other trade in the message: a counter-offer is no acceptance. The
    # offer quoted in its maker's words ("Deal: 1 apple for 2 bananas") is no other trade.
    if says_yes(text, fruits) and all(m in pending.offers for m in made):
        return made[-1] if made else pending.offers[-1]
    return None


def read_agreement(turns: list[Turn], fruits: list[str] | tuple[str, ...]) -> Agreement | None:
    """The trade both players accepted, read exactly in code (no model), or None.

    The pending offer is the last exact offer (`read_offers`) a message makes. A later message
    by the *other* player that does not refuse (`fruit_accept.says_no`) accepts it when it
    (a) makes the same trade from its own side, or (b) says yes (`fruit_accept.says_yes`) and
    makes no *different* exact offer (docs/DOMAINS.md has the examples). A speaker accepts
    nothing of its own; where the latest offering message put alternatives on the table, the
    reverse of any of them takes that one, and a plain yes takes the last.

    A reply that accepts and then proposes another trade: by (a), stating the pending trade
    back accepts it whatever follows; the other trade becomes the pending offer, and if the
    first player accepts that too, the later agreement stands (the last trade accepted is the
    one paid; a refusal after an agreement does not undo it). By (b), a yes with another
    trade in the same message is no acceptance of the pending one: "Deal, but make it 3
    blueberries for 1 kiwi", the form small models write, is a counter-offer, and a bare yes
    cannot tell it from "Deal. Also, 1 banana for 1 blueberry?"; the reading pays a trade only
    when both clearly took that trade, and a writer that means both can say the trade back.
    The other trade is then the pending offer."""
    pending: _Pending | None = None
    agreed: Agreement | None = None
    for at, turn in enumerate(turns):
        made = read_offers(turn.text, fruits)
        taken = None
        if pending is not None and pending.speaker != turn.speaker:
            taken = _taken(pending, made, turn.text, tuple(fruits))
            if taken is not None:
                agreed = Agreement(pending.speaker, taken, at)
        rest = [o for o in made if taken is None or o not in (taken, taken.reversed())]
        if rest:
            pending = _Pending(turn.speaker, tuple(rest))
        elif taken is not None:
            pending = None
    return agreed


# ---- the utility ------------------------------------------------------------------------------


def trade_of(offer: Offer, speaker: int) -> tuple[dict[str, int], dict[str, int]]:
    """What each of two players hands over when `speaker`'s offer is taken."""
    gives = [dict(offer.gives), dict(offer.gets)]
    return (gives[0], gives[1]) if speaker == 0 else (gives[1], gives[0])


def trade_label(names: list[str], gives: tuple[dict[str, int], dict[str, int]]) -> str:
    """"Ann gives 1 apple and Ben gives 2 bananas": a trade as the which-trade choice names it."""
    return " and ".join(f"{name} gives {amount_text(tuple(sorted(g.items())))}"
                        for name, g in zip(names, gives, strict=True))


def named_trades(spec: DomainSpec, ctx: RewardContext) -> dict[str, list[dict[str, int]]]:
    """Label -> who gives what, for every exact offer the messages make, in order, once each."""
    names = ctx.instance.names
    out: dict[str, list[dict[str, int]]] = {}
    for turn in ctx.transcript:
        for offer in read_offers(turn.text, fruits_of(spec)):
            gives = trade_of(offer, turn.speaker)
            out.setdefault(trade_label(names, gives), list(gives))
    return out


#: Who gives what in an agreed trade (players in name order), or None: nothing agreed.
Trade = tuple[dict[str, int], dict[str, int]] | None


async def exact_trade(ctx: RewardContext) -> Trade:
    """The trade both accepted, read in code (`read_agreement`); no model call."""
    found = read_agreement(ctx.transcript, fruits_of(ctx.spec))
    return None if found is None else found.trade()


async def asked_trade(ctx: RewardContext) -> Trade:
    """The trade both accepted among those the messages offer, read by the reward LLM's
    calibrated choices (`agreement.agreed_label`): no offer named, no question and no trade."""
    named = named_trades(ctx.spec, ctx)
    label = await agreed_label(ctx, list(named), OfferParams.of(ctx.spec).offer_prompt)
    if label is None:
        return None
    first, second = named[label]
    return first, second


#: The ways to read the agreed trade, by `params.agreement`.
READERS: dict[str, AgreementReader] = {EXACT: exact_trade, ASK: asked_trade}


def agreement_readers(spec: DomainSpec) -> dict[str, AgreementReader]:
    """Both readings by name, the configured one first (`gtsteer eval reward --labelled`)."""
    configured = OfferParams.of(spec).agreement
    return {configured: READERS[configured], **READERS}


async def offer_utility(ctx: RewardContext) -> list[float]:
    """The trade both accepted, read as `params.agreement` says, paid exactly
    (`fruit_trade.trade_values`)."""
    trade = await READERS[OfferParams.of(ctx.spec).agreement](ctx)
    owned, values = baskets(ctx.instance)
    return trade_values(owned, values, None if trade is None else list(trade))
