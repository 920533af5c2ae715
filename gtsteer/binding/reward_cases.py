"""Templated transcripts with known payoffs, to measure a reward path (`gtsteer eval reward`).

A domain with an exact utility may give a case writer (`Domain.reward_cases`): given an
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

from gtsteer.binding.domain import RewardCases
from gtsteer.binding.instances import Instance
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


def reward_cases_for(spec: DomainSpec) -> RewardCases:
    """The case writer of the spec's domain; a clear error when it has none."""
    domain = spec.hooks
    if domain.utility is None:
        raise ValueError(
            f"domain: `{spec.name}` has no exact utility, so no transcript has a known "
            "payoff to test the reward model against"
        )
    if domain.reward_cases is None:
        raise ValueError(f"domain: `{domain.name}` writes no reward cases (Domain.reward_cases)")
    return domain.reward_cases
