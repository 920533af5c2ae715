"""Fruit trading with an exact utility.

The reward LLM only extracts *what was agreed* (who gives which fruit) as a validated object;
the payoff is computed here from each player's private valuations, so it cannot be misjudged
arithmetic. A trade that gives away fruit the giver does not have counts as no trade.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from functools import lru_cache
from typing import Literal, Self

from pydantic import BaseModel, Field, create_model, field_validator

from gtsteer.binding.domain import DomainParams
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.instances import Instance
from gtsteer.binding.reward import RewardContext, player_keys
from gtsteer.binding.spec import DomainSpec

FRUITS = ["apple", "banana", "blueberry", "kiwi"]
OWNED, VALUES = "fruits_owned", "fruit_values"
_PAIR = re.compile(r"([A-Za-z][\w ]*?)\s*:\s*(-?\d+)")


#: The largest `max_count`: far above a dialogue's trades, far below any integer overflow.
MAX_COUNT = 1000


class FruitParams(DomainParams):
    """`params` of a fruit-trading config: a basket and a value range."""

    fruits: list[str] = Field(default_factory=lambda: list(FRUITS))
    #: The most of one fruit a basket holds; bounded so that counts, their JSON schema and
    #: the utilities stay ordinary integers (10^23 overflowed the schema at expansion).
    max_count: int = Field(3, ge=1, le=MAX_COUNT)
    #: Each fruit's value is drawn from [low, high].
    value_range: tuple[int, int] = (1, 8)

    @classmethod
    def of(cls, spec: DomainSpec) -> Self:
        """The spec's params read as this model's fields only: a domain built on fruit trading
        (the offer domain's `OfferParams`) adds its own, which fruit trading's helpers skip.
        Unknown keys are still refused when the config is loaded, by its domain's own model."""
        return cls.model_validate({k: v for k, v in spec.params.items() if k in cls.model_fields})

    @field_validator("fruits")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if not v or len(set(v)) != len(v):
            raise ValueError("needs distinct fruit names")
        return v

    @field_validator("value_range")
    @classmethod
    def _range(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not 0 <= v[0] <= v[1]:
            raise ValueError(f"need 0 <= low <= high, got [{v[0]}, {v[1]}]")
        return v


def fruits_of(spec: DomainSpec) -> list[str]:
    return FruitParams.of(spec).fruits


def max_count_of(spec: DomainSpec) -> int:
    return FruitParams.of(spec).max_count


def max_items(spec: DomainSpec) -> int:
    """The most fruits one side can hand over: a full basket (`max_count` of every fruit)."""
    return max_count_of(spec) * len(fruits_of(spec))


def render_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{fruit}: {n}" for fruit, n in counts.items())


def parse_counts(text: str) -> dict[str, int]:
    """Inverse of `render_counts` ("apple: 2, kiwi: 1" -> {"apple": 2, "kiwi": 1})."""
    return {m.group(1).strip(): int(m.group(2)) for m in _PAIR.finditer(text)}


def fruit_private_info(
    spec: DomainSpec, rng: random.Random, player: int, names: list[str]
) -> dict[str, str]:
    """A basket (0..max_count of each fruit, at least one fruit) and a value per fruit."""
    params = FruitParams.of(spec)
    fruits, max_count = params.fruits, params.max_count
    lo, hi = params.value_range
    owned = {f: rng.randint(0, max_count) for f in fruits}
    if not any(owned.values()):
        owned[rng.choice(fruits)] = 1
    values = {f: rng.randint(lo, hi) for f in fruits}
    return {OWNED: render_counts(owned), VALUES: render_counts(values)}


def fruit_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """Own counts / max_count, then own values / top of the value range, fruit by fruit."""
    params = FruitParams.of(spec)
    fruits, max_count = params.fruits, params.max_count
    top = params.value_range[1] or 1
    owned, values = parse_counts(info[OWNED]), parse_counts(info[VALUES])
    return [owned.get(f, 0) / max_count for f in fruits] + [values.get(f, 0) / top for f in fruits]


@lru_cache(maxsize=64)
def trade_model(names: tuple[str, ...], fruits: tuple[str, ...], max_items: int) -> type[BaseModel]:
    """`{"deal": bool, "<name>_gives": [fruit, ...], ...}`: one list entry per fruit unit.

    Lists of fruit names keep the JSON short (a small model writes ~25 tokens) and the grammar
    tight (only known fruits). Every field is required, so a grammar-constrained model cannot
    skip one side of the trade. `max_items` must allow a full basket (see `max_items`), or a
    grammar would silently cut a legal trade short."""
    fruit = Literal[fruits]  # type: ignore[valid-type]
    fields: dict = {"deal": (bool, Field(description="True if they agreed on a trade"))}
    for key, name in zip(player_keys(names), names, strict=True):
        fields[f"{key}_gives"] = (
            list[fruit],
            Field(max_length=max_items, description=f"fruits {name} hands over, one per fruit"),
        )
    return create_model("FruitTrade", **fields)


def trade_values(
    owned: list[dict[str, int]],
    values: list[dict[str, int]],
    gives: list[dict[str, int]] | None,
) -> list[float]:
    """Each player's change in basket value; no deal or an impossible trade changes nothing."""
    n = len(owned)
    if n != 2:
        raise ValueError("fruit trading is a two-player domain")
    if gives is None:
        return [0.0] * n
    for p in range(n):
        for fruit, count in gives[p].items():
            if count < 0 or count > owned[p].get(fruit, 0):
                return [0.0] * n  # giving what one does not have: the trade cannot happen
    out = []
    for p in range(n):
        received = gives[1 - p]
        gain = sum(values[p].get(f, 0) * c for f, c in received.items())
        loss = sum(values[p].get(f, 0) * c for f, c in gives[p].items())
        out.append(float(gain - loss))
    return out


def gives_from(trade: BaseModel, names: list[str]) -> list[dict[str, int]] | None:
    """Per-player counts from an extracted trade; None when there was no deal."""
    data = trade.model_dump()
    if not data["deal"]:
        return None
    return [dict(Counter(data[f"{key}_gives"])) for key in player_keys(names)]


def baskets(instance: Instance) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """(owned, values) per player, parsed from the instance's private information."""
    owned = [parse_counts(info[OWNED]) for info in instance.private_info]
    values = [parse_counts(info[VALUES]) for info in instance.private_info]
    return owned, values


def trade_bounds(spec: DomainSpec, instance: Instance) -> tuple[float, float]:
    """The payoff range of any legal trade: at worst a player gives away its whole basket, at
    best it receives the other's whole basket (valued at its own prices)."""
    owned, values = baskets(instance)
    n = len(owned)
    worth = [[sum(values[p].get(f, 0) * c for f, c in owned[q].items()) for q in range(n)]
             for p in range(n)]  # fmt: skip
    lo = -max(worth[p][p] for p in range(n))
    hi = max(worth[p][q] for p in range(n) for q in range(n) if q != p)
    return float(lo), float(max(hi, lo + 1))  # lo + 1: a range even for empty baskets


def check_fruit_spec(spec: DomainSpec) -> None:
    """Fruit trading is bilateral (its params are checked by `FruitParams`)."""
    if spec.num_players != 2:
        raise ValueError(f"field `players`: fruit trading needs 2 players, got {spec.num_players}")


async def fruit_trade_utility(ctx: RewardContext) -> list[float]:
    names = ctx.instance.names
    model = trade_model(tuple(names), tuple(fruits_of(ctx.spec)), max_items(ctx.spec))
    trade = await ctx.extract(model)
    owned, values = baskets(ctx.instance)
    return trade_values(owned, values, gives_from(trade, names))


def check_fruit_instance(spec: DomainSpec, instance: Instance) -> None:
    """Baskets and values the utility can read: known fruits, counts and values in range."""
    params = FruitParams.of(spec)
    fruits, max_count = params.fruits, params.max_count
    lo, hi = params.value_range
    for p, info in enumerate(instance.private_info):
        owned, values = parse_counts(info.get(OWNED, "")), parse_counts(info.get(VALUES, ""))
        if sorted(owned) != sorted(fruits) or not all(0 <= n <= max_count for n in owned.values()):
            raise DomainCheckError(
                f"private_info.{p}.{OWNED}", f"need 0..{max_count} of each of {fruits}"
            )
        if sorted(values) != sorted(fruits) or not all(lo <= v <= hi for v in values.values()):
            raise DomainCheckError(
                f"private_info.{p}.{VALUES}", f"need a value in {lo}..{hi} for each of {fruits}"
            )
