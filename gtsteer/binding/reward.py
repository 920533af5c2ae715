"""Payoffs of a finished dialogue: an exact utility in code, or one structured LLM call.

Either way the result is clipped to the spec's bounds and the clipping is reported, so a
reward model that wanders off the scale is visible in the summary instead of silently skewing
the equilibrium.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from gtsteer.binding.instances import Instance, lookup
from gtsteer.binding.prompts import Turn, reward_prompt
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM

M = TypeVar("M", bound=BaseModel)


class TerminalRecord(BaseModel):
    """A finished dialogue: what a utility sees (instructions included) and what it returned."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: DomainSpec
    instance: Instance
    transcript: list[Turn]
    history: list[int] = Field(default_factory=list)

    def instructions(self, player: int) -> list[str]:
        """The instructions `player` chose, in order (private actions, visible to utilities)."""
        return [t.instruction for t in self.transcript if t.speaker == player and t.instruction]


class RewardContext(TerminalRecord):
    """A terminal plus the reward LLM, for utilities that extract facts before computing."""

    llm: LLM

    def prompt(self) -> str:
        """The spec's reward prompt rendered for this transcript."""
        return reward_prompt(self.spec, self.instance, self.transcript)

    async def extract(self, schema: type[M], prompt: str | None = None) -> M:
        """A validated `schema` object from the reward LLM (temperature 0, cached)."""
        result = await self.llm.structured(
            prompt if prompt is not None else self.prompt(),
            schema,
            seed=0,
            temperature=0.0,
            max_tokens=self.spec.payoff.max_tokens,
        )
        return result.value


Utility = Callable[[RewardContext], Awaitable[list[float]]]
_UTILITIES: dict[str, Utility] = {}


def register_utility(name: str) -> Callable[[Utility], Utility]:
    """Register `async def utility(ctx) -> list[float]` under `name` (used by `payoff.utility`)."""

    def deco(fn: Utility) -> Utility:
        _UTILITIES[name] = fn
        return fn

    return deco


def get_utility(name: str) -> Utility:
    return lookup(_UTILITIES, name, "utility")


class Reward(BaseModel):
    raw: list[float]
    returns: list[float]

    @property
    def clipped(self) -> bool:
        return self.raw != self.returns


def field_name(name: str) -> str:
    """A JSON-friendly field name from a player's name ("Mary Ann" -> "mary_ann")."""
    return re.sub(r"\W+", "_", name.strip().lower()).strip("_") or "player"


def player_keys(names: tuple[str, ...] | list[str]) -> list[str]:
    """One distinct JSON field name per player, in order (a suffix resolves collisions)."""
    keys: list[str] = []
    for i, name in enumerate(names):
        key = field_name(name)
        keys.append(f"{key}_{i}" if key in keys else key)
    return keys


@lru_cache(maxsize=256)
def payoff_model(names: tuple[str, ...], low: float, high: float) -> type[BaseModel]:
    """Both players' payoffs as one object. Bounds are described, not enforced: out-of-range
    answers are clipped and counted rather than retried into a failure."""
    fields: dict = {
        key: (float, Field(description=f"{name}'s payoff, from {low:g} to {high:g}"))
        for key, name in zip(player_keys(names), names, strict=True)
    }
    return create_model("Payoffs", **fields)


async def compute_reward(ctx: RewardContext) -> Reward:
    spec = ctx.spec
    if spec.payoff.utility is not None:
        raw = [float(v) for v in await get_utility(spec.payoff.utility)(ctx)]
    else:
        model = payoff_model(tuple(ctx.instance.names), spec.payoff.min, spec.payoff.max)
        value = await ctx.extract(model)
        raw = [float(v) for v in value.model_dump().values()]
    if len(raw) != spec.num_players:
        raise ValueError(f"utility returned {len(raw)} payoffs for {spec.num_players} players")
    if spec.payoff.zero_sum:  # centre, so that clipping to symmetric bounds keeps the sum at 0
        mean = sum(raw) / len(raw)
        raw = [v - mean for v in raw]
    lo, hi = spec.payoff.min, spec.payoff.max
    return Reward(raw=raw, returns=[min(hi, max(lo, v)) for v in raw])
