"""The statistics of `gtsteer eval reward`: how far each reward path's payoffs fall from the
truth (Norm, with its interval) and how often their sign flips (Sgn), and how often a reading
of a hand-labelled dialogue is right (`--labelled`), from plain scored cases. The driver
(`gtsteer.runs.eval_reward`) writes and scores the cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel

from gtsteer.solvers.metrics import MeanCI, Proportion, SignFlips, mean_ci, wilson

Over = Literal["all", "agreed", "none"]


class ScoredCase(BaseModel):
    outcome: str
    instance: int
    transcript: str
    facts: dict
    truth: list[float]
    #: The instance's payoff range (the utility's derived bounds, else the config's): Norm's unit.
    bounds: tuple[float, float]
    predicted: dict[str, list[float] | None]  # path -> payoffs (None: the path failed)
    failures: dict[str, str]  # path -> why it failed


class PathError(BaseModel):
    """Error of one reward path on one outcome type ("all": every outcome type together)."""

    path: str
    outcome: str
    cases: int
    failures: int
    norm: MeanCI  # |predicted - true| / range, over (case, player) pairs
    #: Sgn: (case, player) pairs whose predicted payoff has another sign than the truth (0 is
    #: its own sign), of all, with a 95% Wilson interval; lower is better (None: none scored).
    sign_flips: SignFlips | None


def _nonnegative(m: MeanCI) -> MeanCI:
    """A t-interval of a mean of absolute errors can dip below 0, which no error can."""
    if m.ci_low is None or m.ci_low >= 0.0:
        return m
    return m.model_copy(update={"ci_low": 0.0})


def path_error(path: str, outcome: str, scored: list[ScoredCase]) -> PathError:
    mine = [c for c in scored if outcome == "all" or c.outcome == outcome]
    ok = [(c, pred) for c in mine if (pred := c.predicted.get(path)) is not None]
    errs = [
        abs(p - t) / (c.bounds[1] - c.bounds[0])
        for c, pred in ok for p, t in zip(pred, c.truth, strict=True)
    ]
    flips = [
        int(np.sign(p) != np.sign(t))
        for c, pred in ok for p, t in zip(pred, c.truth, strict=True)
    ]
    return PathError(
        path=path, outcome=outcome, cases=len(mine), failures=len(mine) - len(ok),
        norm=_nonnegative(mean_ci(errs)),
        sign_flips=wilson(sum(flips), len(flips)) if flips else None,
    )


class ReadingAccuracy(BaseModel):
    """One reading's share of items read right, over all items or one label kind."""

    path: str
    kind: Over
    items: int
    failures: int
    #: None when there is no item of this kind.
    accuracy: Proportion | None


class Read(Protocol):
    """What `reading_accuracy` reads of one labelled dialogue's readings."""

    @property
    def kind(self) -> str: ...
    @property
    def correct(self) -> Mapping[str, bool]: ...
    @property
    def failures(self) -> Mapping[str, str]: ...


def reading_accuracy(path: str, kind: Over, items: Sequence[Read]) -> ReadingAccuracy:
    mine = [r for r in items if kind == "all" or r.kind == kind]
    right = sum(r.correct[path] for r in mine)
    return ReadingAccuracy(path=path, kind=kind, items=len(mine),
                           failures=sum(path in r.failures for r in mine),
                           accuracy=wilson(right, len(mine)) if mine else None)
