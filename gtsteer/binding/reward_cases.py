"""Templated transcripts with known payoffs, to measure a reward path (`gtsteer eval reward`).

A domain with an exact utility registers a case writer under the utility's name: given an
instance and an outcome type it writes a short dialogue whose true payoffs it knows (the paper's
Appendix C: two-turn templates for a valid deal, a rejection and an unfinished negotiation).
It also states the payoff rule in words, for the "free" path in which the LLM computes the
payoffs itself instead of only extracting what was agreed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from gtsteer.binding.instances import Instance, lookup
from gtsteer.binding.prompts import Turn
from gtsteer.binding.spec import DomainSpec

Outcome = Literal["valid", "rejected", "incomplete"]
OUTCOMES: tuple[Outcome, ...] = ("valid", "rejected", "incomplete")


class RewardCase(BaseModel):
    """One templated dialogue and what a correct reward model must return for it."""

    outcome: Outcome
    instance: Instance
    transcript: list[Turn]
    truth: list[float]  # per player, in the instance's name order
    #: What the dialogue says in structured form (e.g. who gives which fruit), for reports.
    facts: dict[str, Any] = Field(default_factory=dict)


#: (spec, rng, instance, outcome) -> a case whose truth the writer computed exactly.
CaseWriter = Callable[[DomainSpec, random.Random, Instance, Outcome], RewardCase]


class CaseDomain(BaseModel):
    """A registered case writer and the payoff rule in words (for the free LLM score)."""

    model_config = {"arbitrary_types_allowed": True}

    writer: Any  # CaseWriter
    payoff_rule: str


_CASES: dict[str, CaseDomain] = {}


def register_reward_cases(name: str, payoff_rule: str) -> Callable[[CaseWriter], CaseWriter]:
    """Register `writer(spec, rng, instance, outcome) -> RewardCase` under a utility's name."""

    def deco(fn: CaseWriter) -> CaseWriter:
        _CASES[name] = CaseDomain(writer=fn, payoff_rule=payoff_rule.strip())
        return fn

    return deco


def reward_cases_for(spec: DomainSpec) -> CaseDomain:
    """The case writer of the spec's exact utility; a clear error when it has none."""
    if spec.payoff.utility is None:
        raise ValueError(
            f"payoff.utility: `{spec.name}` has no exact utility, so no transcript has a known "
            "payoff to test the reward model against"
        )
    try:
        return lookup(_CASES, spec.payoff.utility, "reward-case writer")
    except KeyError as exc:
        raise ValueError(f"payoff.utility: {exc.args[0]}") from None
