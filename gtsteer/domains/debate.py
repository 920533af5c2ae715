"""Debate (arXiv 2402.01704, Section 3): one topic, two opposite stances, an LLM judge.

The topic and both stances are drawn together (a joint generator), so the two debaters always
argue opposite sides of the same statement. The payoff asks the judge, through `LLM.choose`
over the two names (not free text), who argued better: +1 for the winner, -1 for the loser.
"""

from __future__ import annotations

import random

from gtsteer.binding.domain_checks import (
    DomainCheckError,
    register_instance_check,
)
from gtsteer.binding.features import register_private_features
from gtsteer.binding.instances import Instance, register_joint_private_info
from gtsteer.binding.reward import RewardContext, register_utility
from gtsteer.binding.spec import DomainSpec

DOMAIN = "debate"
TOPIC, STANCE = "topic", "stance"


def sides_of(spec: DomainSpec) -> list[str]:
    return list(spec.params.get("sides", []))


def check_debate(spec: DomainSpec) -> None:
    if spec.num_players != 2:
        raise DomainCheckError("players", f"a debate has 2 players, got {spec.num_players}")
    topics = spec.params.get("topics")
    if not isinstance(topics, list) or not topics or not all(
        isinstance(t, str) and t.strip() for t in topics
    ):
        raise DomainCheckError("params.topics", "expected a non-empty list of statements")
    sides = spec.params.get("sides")
    if not isinstance(sides, list) or len(sides) != 2 or len(set(sides)) != 2:
        raise DomainCheckError(
            "params.sides", f"a debate needs exactly two opposite sides, got {sides!r}"
        )
    if not (spec.payoff.zero_sum and spec.payoff.min == -1 and spec.payoff.max == 1):
        raise DomainCheckError("payoff", "the judge pays +1/-1: use min -1, max 1, zero_sum")


@register_joint_private_info(DOMAIN)
def debate_private_info(
    spec: DomainSpec, rng: random.Random, names: list[str]
) -> list[dict[str, str]]:
    """The same topic for both; the two sides in a random order."""
    topic = rng.choice(list(spec.params["topics"]))
    sides = sides_of(spec)
    rng.shuffle(sides)
    return [{TOPIC: topic, STANCE: side} for side in sides]


@register_instance_check(DOMAIN)
def check_debate_instance(spec: DomainSpec, instance: Instance) -> None:
    """One topic for both debaters, who hold the two configured sides."""
    a, b = instance.private_info
    if not a.get(TOPIC) or a.get(TOPIC) != b.get(TOPIC):
        raise DomainCheckError(f"private_info.1.{TOPIC}", "both debaters need the same topic")
    if sorted([a.get(STANCE, ""), b.get(STANCE, "")]) != sorted(sides_of(spec)):
        raise DomainCheckError(
            f"private_info.{STANCE}", f"the stances must be the two sides {sides_of(spec)}"
        )


@register_private_features(DOMAIN)
def debate_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """One-hot of the own side, then one-hot of the topic (0s for a topic not in the list)."""
    sides, topics = sides_of(spec), list(spec.params["topics"])
    return [float(info.get(STANCE) == s) for s in sides] + [
        float(info.get(TOPIC) == t) for t in topics
    ]


def verdict_returns(names: list[str], winner: str) -> list[float]:
    """+1 for the winner, -1 for the other."""
    if winner not in names:
        raise ValueError(f"judge named {winner!r}, not one of {names}")
    return [1.0 if n == winner else -1.0 for n in names]


@register_utility(DOMAIN, validate=check_debate)
async def debate_utility(ctx: RewardContext) -> list[float]:
    names = ctx.instance.names
    result = await ctx.llm.choose(ctx.prompt(), names, seed=0)
    return verdict_returns(names, result.choice)
