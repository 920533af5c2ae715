"""The statistics of `gtsteer eval verdict`: each (policy, judge setting) cell's win rate
with its 95% Wilson interval, the verdicts reached and the mean rounds, and each policy's
rate pooled over every setting, from played outcomes (the driver plays them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel

from gtsteer.solvers.metrics import WinRate, wilson


class Outcome(Protocol):
    """What the statistics read of one played verdict game."""

    @property
    def win(self) -> bool: ...
    @property
    def verdict(self) -> str: ...
    @property
    def rounds(self) -> int: ...


class VerdictCell(BaseModel):
    """One policy against one judge setting."""

    policy: str
    prompt_index: int
    temperature: float
    win: WinRate
    #: How often each verdict was reached (the continue label never ends a game).
    verdicts: dict[str, int]
    mean_rounds: float


def verdict_cell(policy: str, prompt_index: int, temperature: float,
                 outcomes: Sequence[Outcome], verdicts: Sequence[str]) -> VerdictCell:
    wins = [o.win for o in outcomes]
    return VerdictCell(
        policy=policy, prompt_index=prompt_index, temperature=temperature,
        win=wilson(sum(wins), len(wins)),
        verdicts={v: sum(o.verdict == v for o in outcomes) for v in verdicts},
        mean_rounds=sum(o.rounds for o in outcomes) / len(outcomes))


def win_totals(by_policy: Mapping[str, Sequence[Outcome]]) -> dict[str, WinRate]:
    """Each policy's wins pooled over every judge setting."""
    return {name: wilson(sum(o.win for o in mine), len(mine)) for name, mine in by_policy.items()}
