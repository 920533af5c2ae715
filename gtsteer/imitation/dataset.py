"""The imitation dataset: one `DecisionRecord` per decision node's information state.

A record is plain data (no pyspiel), so any producer -- solved dialogue games here, Werewolf
playstyle games later -- can feed `train_policy`. On disk: one JSON object per line
(`records.jsonl`), embeddings beside it as `.npy` in the same row order (see docs/IMITATION.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

#: Targets may come from an average policy that sums to 1 up to float error.
SUM_TOLERANCE = 1e-4


class DatasetError(ValueError):
    """The records cannot be used for training or evaluation; the message names the field."""


class DecisionRecord(BaseModel):
    """One information state at which `player` chooses an instruction."""

    #: Human-readable, situation-first view of the information state (what is embedded).
    text: str = Field(min_length=1)
    #: Optional structured features a domain provides (same length in every record).
    features: list[float] | None = None
    #: The player's instruction labels, in action order.
    actions: list[str] = Field(min_length=1)
    #: CFR average policy over `actions` (the training target).
    target: list[float]
    #: Reach probability of the information state under the CFR profile (the training weight).
    weight: float = Field(ge=0.0)
    #: Which generated instance (game) the state belongs to; train/held-out split by this.
    instance: int
    player: int = Field(ge=0)
    #: Anything else worth keeping (the solver's information-state key, turn, domain...).
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("actions")
    @classmethod
    def _unique_actions(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"actions: duplicate labels in {v}")
        return v

    @field_validator("features")
    @classmethod
    def _finite_features(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and not all(math.isfinite(x) for x in v):
            raise ValueError("features: every value must be finite")
        return v

    @model_validator(mode="after")
    def _target_is_distribution(self) -> DecisionRecord:
        if len(self.target) != len(self.actions):
            raise ValueError(
                f"target: {len(self.target)} probabilities for {len(self.actions)} actions"
            )
        if any(p < 0.0 or not math.isfinite(p) for p in self.target):
            raise ValueError(f"target: probabilities must be finite and >= 0, got {self.target}")
        total = sum(self.target)
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise ValueError(f"target: probabilities sum to {total}, not 1")
        return self


def action_labels(records: Sequence[DecisionRecord]) -> list[str]:
    """Every label that appears, in first-seen order: the output layer of the policy."""
    labels: dict[str, None] = {}
    for r in records:
        labels.update(dict.fromkeys(r.actions))
    return list(labels)


def feature_dim(records: Sequence[DecisionRecord]) -> int | None:
    """The common length of `features` (None when no record has features)."""
    dims = {None if r.features is None else len(r.features) for r in records}
    if len(dims) > 1:
        raise DatasetError(
            f"features: records disagree on presence/length: {sorted(map(str, dims))}"
        )
    return dims.pop() if dims else None


def instances_of(records: Iterable[DecisionRecord]) -> list[int]:
    return sorted({r.instance for r in records})


def check_records(records: Sequence[DecisionRecord], what: str = "dataset") -> None:
    """Raise `DatasetError` for an empty set or one without any positive weight."""
    if not records:
        raise DatasetError(f"{what}: no decision records (did every instance fail to solve?)")
    if sum(r.weight for r in records) <= 0.0:
        raise DatasetError(f"{what}: every record has weight 0 (no state is reached)")
    feature_dim(records)


def split_instances(
    instances: Sequence[int], holdout: float, seed: int
) -> tuple[list[int], list[int]]:
    """(training, held-out) instance ids; a seeded shuffle, so the split is reproducible."""
    ids = sorted(set(instances))
    n = len(ids)
    count = int(holdout) if holdout >= 1 else round(holdout * n)
    if holdout > 0 and count == 0:
        raise DatasetError(
            f"holdout: {holdout} of {n} instance(s) is an empty held-out set; "
            "use more games or a larger holdout"
        )
    if count >= n:
        raise DatasetError(
            f"holdout: {count} held-out of {n} instance(s) leaves none to train on"
        )
    order = np.random.default_rng(seed).permutation(n)
    held = sorted(ids[i] for i in order[:count])
    return [i for i in ids if i not in set(held)], held


def records_to_jsonl(records: Iterable[DecisionRecord]) -> str:
    """The JSONL text of `records` (the driver writes it; algorithms never write files)."""
    return "".join(r.model_dump_json() + "\n" for r in records)


def read_records(path: str | Path) -> list[DecisionRecord]:
    """Records from a JSONL file; a bad line is a `DatasetError` naming file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read records ({exc.strerror or exc})") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(DecisionRecord.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise DatasetError(f"{path}:{n}: invalid record: {exc}") from None
    return out
