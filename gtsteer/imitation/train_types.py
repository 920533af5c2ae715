"""The pydantic types of training: its config, fit metrics and report.

Free of torch, so the CLI, the drivers and `gtsteer.imitation` import them without loading
torch (seconds and ~200 MiB); `gtsteer.imitation.train` re-exports them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from gtsteer.imitation.policy import FeatureMode


class TrainConfig(BaseModel):
    hidden: tuple[int, ...] = (256, 256)
    lr: float = Field(1e-3, gt=0.0)
    batch: int = Field(128, ge=1)
    steps: int = Field(10_000, ge=1)
    seed: int = 0
    #: Held-out instances: a fraction in (0, 1) of the instances, or a whole count >= 1
    #: (as scikit-learn's test_size); 0 trains on everything and reports no held-out numbers.
    holdout: float = Field(0.2, ge=0.0)
    features: FeatureMode = "text"
    weighting: Literal["reach", "uniform"] = "reach"
    #: Points on the training curve (held-out cross-entropy is computed at each).
    curve_points: int = Field(50, ge=1)
    #: torch intra-op threads while training (see `model.torch_threads`).
    threads: int = Field(1, ge=1)

    @field_validator("hidden")
    @classmethod
    def _positive_layers(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(h < 1 for h in v):
            raise ValueError(f"hidden: every layer needs >= 1 unit, got {v}")
        return v

    @field_validator("holdout")
    @classmethod
    def _holdout_count_is_whole(cls, v: float) -> float:
        if v >= 1 and v != int(v):
            raise ValueError(f"holdout: a count of instances must be whole, got {v}")
        return v


class FitMetrics(BaseModel):
    """How close the policy is to the CFR targets on a set of records.

    `cross_entropy`, `kl` and `top1` weight each state by its reach probability (what matters
    on the equilibrium path); the `_uniform` variants weight every state alike (off-path states
    matter to NashConv). KL is KL(target || policy); top-1 counts a state as agreeing when the
    policy's most likely instruction is one of the target's (ties within 1e-6)."""

    records: int
    instances: int
    cross_entropy: float | None
    kl: float | None
    top1: float | None
    kl_uniform: float
    top1_uniform: float
    target_entropy: float | None


class CurvePoint(BaseModel):
    step: int
    train_loss: float  # mean batch loss since the previous point
    heldout_cross_entropy: float | None


class TrainReport(BaseModel):
    config: TrainConfig
    actions: list[str]
    embedder: str | None
    input_dim: int
    train_instances: list[int]
    heldout_instances: list[int]
    train: FitMetrics
    heldout: FitMetrics | None
    curve: list[CurvePoint]
    seconds: float

    def numbers(self) -> dict:
        """Everything that must repeat exactly under the same seed (all but the time)."""
        return self.model_dump(exclude={"seconds"})
