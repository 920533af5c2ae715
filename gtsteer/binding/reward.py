"""Payoffs of a finished dialogue: an exact utility in code, or one structured LLM call.

Either way the result is clipped to the spec's bounds and the clipping is reported, so a
reward model that wanders off the scale is visible in the summary instead of silently skewing
the equilibrium.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from gtsteer.binding.instances import Instance
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
    #: The judge's final verdict in a verdict game (None elsewhere).
    verdict: str | None = None

    def instructions(self, player: int) -> list[str]:
        """The instructions `player` chose, in order (private actions, visible to utilities)."""
        return [t.instruction for t in self.transcript if t.speaker == player and t.instruction]


#: The transcript a calibrating call sees instead of the dialogue.
CONTENT_FREE = "N/A"


class RewardContext(TerminalRecord):
    """A terminal plus the reward LLM, for utilities that extract facts before computing."""

    llm: LLM

    def prompt(self, template: str | None = None, transcript: str | None = None) -> str:
        """`template` (default: the spec's reward prompt) rendered for this transcript."""
        return reward_prompt(self.spec, self.instance, self.transcript, template, transcript)

    async def choose_calibrated(self, template: str, options: list[str]) -> str:
        """One of `options` for `template` on this transcript, by calibrated log-likelihood.

        A small model puts most of its probability on the option it likes whatever the
        transcript (SmolLM2 answered "Tuesday" to most meeting transcripts), so each option's
        score is taken relative to its score with a content-free transcript ("N/A"):
        argmax_o [log P(o | transcript) - log P(o | N/A)] (contextual calibration, Zhao et al.
        2021). The content-free call depends only on the instance, so one instance pays it once.
        A backend without log-likelihoods answers by a constrained choice, uncalibrated."""
        real = await self.llm.choose(self.prompt(template), options, seed=0)
        if real.method != "loglik":
            return real.choice
        empty = await self.llm.choose(self.prompt(template, CONTENT_FREE), options, seed=0)
        return max(options, key=lambda o: real.scores[o] - empty.scores[o])

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


def payoff_bounds(spec: DomainSpec, instance: Instance) -> tuple[float, float]:
    """The payoff range of one instance: the utility's derived bounds, else the config's.

    Zero-sum payoffs get symmetric bounds (the centred vector is scaled into them)."""
    lo, hi = float(spec.payoff.min), float(spec.payoff.max)
    domain = spec.hooks
    if domain.bounds is not None:
        lo, hi = (float(v) for v in domain.bounds(spec, instance))
        if not lo < hi:
            raise ValueError(f"domain {domain.name!r} derived empty payoff bounds [{lo}, {hi}]")
    if spec.payoff.zero_sum:
        b = max(abs(lo), abs(hi))
        lo, hi = -b, b
    return lo, hi


class Reward(BaseModel):
    #: What the utility or reward model said, before centring (zero-sum) and bounding.
    raw: list[float]
    #: The payoffs the game uses: centred for zero-sum specs, then brought into the bounds.
    returns: list[float]
    #: True when the bounds changed the (centred) payoffs: an out-of-range utility or answer.
    clipped: bool = False


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
    answers are clipped and counted rather than retried into a failure. A non-finite number
    (NaN, Infinity) is a malformed answer, retried with feedback and never cached: clipping
    cannot place it (`max(lo, nan)` is `lo`), so it would be read as a silent 0."""
    fields: dict = {
        key: (float, Field(description=f"{name}'s payoff, from {low:g} to {high:g}",
                           allow_inf_nan=False))
        for key, name in zip(player_keys(names), names, strict=True)
    }
    return create_model("Payoffs", **fields)


async def compute_reward(ctx: RewardContext) -> Reward:
    spec = ctx.spec
    utility = spec.hooks.utility
    if utility is not None:
        raw = [float(v) for v in await utility(ctx)]
    else:
        model = payoff_model(tuple(ctx.instance.names), spec.payoff.min, spec.payoff.max)
        value = await ctx.extract(model)
        raw = [float(v) for v in value.model_dump().values()]
    if len(raw) != spec.num_players:
        raise ValueError(f"the utility of domain {utility_name(spec)} returned {len(raw)}"
                         f" payoffs for {spec.num_players} players")
    if not all(math.isfinite(v) for v in raw):
        # Only code gets here (the reward model's answer is validated finite): not retriable.
        raise ValueError(f"the utility of domain {utility_name(spec)} returned a non-finite"
                         f" payoff {raw}; a payoff must be a finite number")
    lo, hi = payoff_bounds(spec, ctx.instance)
    if spec.payoff.zero_sum:
        returns = _zero_sum(raw, hi)
    else:
        returns = [min(hi, max(lo, v)) for v in raw]
    clipped = any(abs(a - b) > 1e-12 for a, b in zip(returns, _centred(raw, spec), strict=True))
    return Reward(raw=raw, returns=returns, clipped=clipped)


def utility_name(spec: DomainSpec) -> str:
    """The domain and its utility function as an error names them: `'bike_haggle'
    (bikes_plugin.haggle_utility)`."""
    utility = spec.hooks.utility
    where = f"{getattr(utility, '__module__', '?')}.{getattr(utility, '__qualname__', utility)}"
    return f"{spec.hooks.name!r} ({where})"


def _centred(raw: list[float], spec: DomainSpec) -> list[float]:
    if not spec.payoff.zero_sum:
        return raw
    mean = sum(raw) / len(raw)
    return [v - mean for v in raw]


def _zero_sum(raw: list[float], bound: float) -> list[float]:
    """Centre, then scale the whole vector into [-bound, bound]: clipping each entry would
    break the zero sum with more than two players ([10, -5, -5] -> [6, -5, -5])."""
    mean = sum(raw) / len(raw)
    centred = [v - mean for v in raw]
    peak = max(abs(v) for v in centred)
    if peak <= bound:
        return centred
    return [v * bound / peak for v in centred]
