"""Debate (arXiv 2402.01704, Section 3): one topic, two opposite stances, an LLM judge.

The topic and both stances are drawn together (a joint generator), so the two debaters always
argue opposite sides of the same statement. The payoff asks the judge, through `LLM.choose`
over the two names (not free text), who argued better: +1 for the winner, -1 for the loser.
"""

from __future__ import annotations

import random

from pydantic import Field, field_validator

from gtsteer.binding.domain import DomainParams
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.instances import Instance
from gtsteer.binding.reward import RewardContext
from gtsteer.binding.spec import DomainSpec

DOMAIN = "debate"
TOPIC, STANCE = "topic", "stance"


class DebateParams(DomainParams):
    """`params` of a debate: the statements to argue and the two opposite sides."""

    topics: list[str] = Field(min_length=1)
    sides: list[str]

    @field_validator("topics")
    @classmethod
    def _topics(cls, v: list[str]) -> list[str]:
        if not all(t.strip() for t in v):
            raise ValueError("expected a non-empty list of statements")
        return v

    @field_validator("sides")
    @classmethod
    def _sides(cls, v: list[str]) -> list[str]:
        if len(v) != 2 or len(set(v)) != 2:
            raise ValueError(f"a debate needs exactly two opposite sides, got {v!r}")
        return v


def sides_of(spec: DomainSpec) -> list[str]:
    return list(DebateParams.of(spec).sides)


def check_debate(spec: DomainSpec) -> None:
    if spec.num_players != 2:
        raise DomainCheckError("players", f"a debate has 2 players, got {spec.num_players}")
    if not (spec.payoff.zero_sum and spec.payoff.min == -1 and spec.payoff.max == 1):
        raise DomainCheckError("payoff", "the judge pays +1/-1: use min -1, max 1, zero_sum")


def debate_private_info(
    spec: DomainSpec, rng: random.Random, names: list[str]
) -> list[dict[str, str]]:
    """The same topic for both; the two sides in a random order."""
    topic = rng.choice(DebateParams.of(spec).topics)
    sides = sides_of(spec)
    rng.shuffle(sides)
    return [{TOPIC: topic, STANCE: side} for side in sides]


def check_debate_instance(spec: DomainSpec, instance: Instance) -> None:
    """One topic for both debaters, who hold the two configured sides."""
    a, b = instance.private_info
    if not a.get(TOPIC) or a.get(TOPIC) != b.get(TOPIC):
        raise DomainCheckError(f"private_info.1.{TOPIC}", "both debaters need the same topic")
    if sorted([a.get(STANCE, ""), b.get(STANCE, "")]) != sorted(sides_of(spec)):
        raise DomainCheckError(
            f"private_info.{STANCE}", f"the stances must be the two sides {sides_of(spec)}"
        )


def debate_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """One-hot of the own side, then one-hot of the topic (0s for a topic not in the list)."""
    params = DebateParams.of(spec)
    sides, topics = params.sides, params.topics
    return [float(info.get(STANCE) == s) for s in sides] + [
        float(info.get(TOPIC) == t) for t in topics
    ]


def verdict_returns(names: list[str], winner: str) -> list[float]:
    """+1 for the winner, -1 for the other."""
    if winner not in names:
        raise ValueError(f"judge named {winner!r}, not one of {names}")
    return [1.0 if n == winner else -1.0 for n in names]


async def debate_utility(ctx: RewardContext) -> list[float]:
    names = ctx.instance.names
    result = await ctx.llm.choose(ctx.prompt(), names, seed=0)
    return verdict_returns(names, result.choice)
