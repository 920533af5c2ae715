"""Train a `DistilledPolicy` on decision records: reach-weighted cross-entropy, Adam, CPU.

The paper's recipe (arXiv 2402.01704, Appendix E) is the default: 2x256 ReLU MLP, Adam with
learning rate 1e-3, batch 128, 10,000 steps. Instances are split into training and held-out
sets before anything is fitted, so held-out numbers are about unseen games.

Weighting: each batch is drawn with probability proportional to a record's weight (its reach
probability under the CFR profile) and the batch loss is the plain mean. In expectation this is
the reach-weighted cross-entropy, with far less variance than uniform batches weighted after the
fact when most states are (nearly) unreachable. `weighting="uniform"` trains every state alike.

Same records, embeddings and config give the same weights on the same machine: the
initialisation and the batch draws use their own seeded generators.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import torch
from pydantic import BaseModel, Field, field_validator

from gtsteer.imitation.dataset import (
    DatasetError,
    DecisionRecord,
    action_labels,
    check_records,
    feature_dim,
    instances_of,
)
from gtsteer.imitation.model import PolicyMLP, assemble_inputs, masked_log_probs, torch_threads
from gtsteer.imitation.policy import DistilledPolicy, FeatureMode, PolicyConfig, TextEmbedder

#: (steps done, total steps), called about a hundred times per run.
ProgressFn = Callable[[int, int], None]
#: Targets within this of the maximum all count as the target's top choice.
TOP1_TIE = 1e-6


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


class _Tensors:
    """Inputs, targets and masks of a record set, aligned with the policy's label order."""

    def __init__(
        self,
        records: Sequence[DecisionRecord],
        inputs: np.ndarray,
        labels: list[str],
    ):
        column = {a: i for i, a in enumerate(labels)}
        n, k = len(records), len(labels)
        target = np.zeros((n, k), np.float32)
        mask = np.zeros((n, k), bool)
        for i, r in enumerate(records):
            cols = [column[a] for a in r.actions]
            target[i, cols] = r.target
            mask[i, cols] = True
        self.records = records
        self.x = torch.from_numpy(np.ascontiguousarray(inputs, np.float32))
        self.target = torch.from_numpy(target)
        self.mask = torch.from_numpy(mask)
        self.weight = np.asarray([r.weight for r in records], np.float64)


def _inputs(
    records: Sequence[DecisionRecord], embeddings: np.ndarray | None, mode: str
) -> np.ndarray:
    feats = None
    if mode in ("struct", "both"):
        if feature_dim(records) is None:
            raise DatasetError(
                f"features={mode!r}: the records carry no structured features "
                "(the domain provides none); use features='text'"
            )
        feats = np.asarray([r.features for r in records], np.float32)
    return assemble_inputs(mode, embeddings, feats)


def fit_metrics(log_probs: np.ndarray, data: _Tensors) -> FitMetrics:
    """Metrics of predicted log-probabilities against the targets (see `FitMetrics`)."""
    target = data.target.numpy().astype(np.float64)
    mask = data.mask.numpy()
    logp = np.where(mask, log_probs, 0.0)
    ce = -(target * logp).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(target > 0, target * np.log(np.where(target > 0, target, 1.0)), 0.0)
    entropy = ent.sum(axis=1)
    kl = np.maximum(ce - entropy, 0.0)
    pred = np.where(mask, log_probs, -np.inf).argmax(axis=1)
    best = target.max(axis=1, keepdims=True)
    agree = (target[np.arange(len(pred)), pred] >= best[:, 0] - TOP1_TIE).astype(float)
    w = data.weight
    total = w.sum()

    def weighted(v: np.ndarray) -> float | None:
        return float((w * v).sum() / total) if total > 0 else None

    return FitMetrics(
        records=len(data.records),
        instances=len({r.instance for r in data.records}),
        cross_entropy=weighted(ce),
        kl=weighted(kl),
        top1=weighted(agree),
        kl_uniform=float(kl.mean()),
        top1_uniform=float(agree.mean()),
        target_entropy=weighted(entropy),
    )


def _log_probs(network: PolicyMLP, data: _Tensors) -> np.ndarray:
    with torch.no_grad():
        return masked_log_probs(network(data.x), data.mask).double().numpy()


def train_policy(
    records: Sequence[DecisionRecord],
    embedder: TextEmbedder | None,
    config: TrainConfig | None = None,
    progress: ProgressFn | None = None,
    *,
    embeddings: np.ndarray | None = None,
    domain: str | None = None,
) -> tuple[DistilledPolicy, TrainReport]:
    """Fit the MLP to the records' CFR targets; held-out instances are never trained on.

    `embeddings` (one row per record, from `embedder`) skips re-embedding when the caller
    already has them; otherwise texts are embedded here (through the embedder's disk cache)."""
    config = config or TrainConfig()
    records = list(records)
    check_records(records)
    train_ids, held_ids = split_instances(instances_of(records), config.holdout, config.seed)
    labels = action_labels(records)
    uses_text = config.features in ("text", "both")
    if uses_text:
        if embedder is None:
            raise DatasetError(f"features={config.features!r} needs an embedder")
        if embeddings is None:
            embeddings = embedder.embed([r.text for r in records])
        embeddings = np.asarray(embeddings, np.float32)
        if embeddings.shape != (len(records), embedder.dim):
            raise DatasetError(
                f"embeddings: shape {embeddings.shape}, expected ({len(records)}, {embedder.dim})"
            )
    inputs = _inputs(records, embeddings if uses_text else None, config.features)
    held = set(held_ids)
    train_rows = [i for i, r in enumerate(records) if r.instance not in held]
    held_rows = [i for i, r in enumerate(records) if r.instance in held]
    train = _Tensors([records[i] for i in train_rows], inputs[train_rows], labels)
    heldout = _Tensors([records[i] for i in held_rows], inputs[held_rows], labels) if held_rows else None
    weights = train.weight if config.weighting == "reach" else np.ones(len(train_rows))
    if weights.sum() <= 0:
        raise DatasetError("training set: every record has weight 0 (no state is reached)")

    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        network = PolicyMLP(inputs.shape[1], len(labels), config.hidden)
    with torch_threads(config.threads):
        curve = _fit(network, train, heldout, weights, config, progress)
        train_fit = fit_metrics(_log_probs(network, train), train)
        held_fit = None if heldout is None else fit_metrics(_log_probs(network, heldout), heldout)
    seconds = time.perf_counter() - start

    policy_config = PolicyConfig(
        embedder=embedder.name if uses_text and embedder is not None else None,
        embedding_dim=embedder.dim if uses_text and embedder is not None else 0,
        features=config.features,
        feature_dim=(feature_dim(records) or 0) if config.features != "text" else 0,
        actions=labels,
        hidden=list(config.hidden),
        domain=domain,
        metadata={
            "train": config.model_dump(mode="json"),
            "train_instances": train_ids,
            "heldout_instances": held_ids,
            "records": len(records),
        },
    )
    policy = DistilledPolicy(policy_config, network, embedder if uses_text else None)
    report = TrainReport(
        config=config,
        actions=labels,
        embedder=policy_config.embedder,
        input_dim=int(inputs.shape[1]),
        train_instances=train_ids,
        heldout_instances=held_ids,
        train=train_fit,
        heldout=held_fit,
        curve=curve,
        seconds=seconds,
    )
    return policy, report


def _fit(
    network: PolicyMLP,
    train: _Tensors,
    heldout: _Tensors | None,
    weights: np.ndarray,
    config: TrainConfig,
    progress: ProgressFn | None,
) -> list[CurvePoint]:
    """Adam on batches drawn in proportion to `weights`; returns the training curve."""
    draws = torch.Generator().manual_seed(config.seed + 1)
    sample_p = torch.from_numpy(weights / weights.sum())
    optimizer = torch.optim.Adam(network.parameters(), lr=config.lr)
    every = max(1, math.ceil(config.steps / config.curve_points))
    tick = max(1, config.steps // 100)
    curve: list[CurvePoint] = []
    running, count = 0.0, 0
    network.train()
    for step in range(1, config.steps + 1):
        idx = torch.multinomial(sample_p, config.batch, replacement=True, generator=draws)
        logp = masked_log_probs(network(train.x[idx]), train.mask[idx])
        loss = -(train.target[idx] * logp).sum(dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
        count += 1
        if step % every == 0 or step == config.steps:
            held_ce = None
            if heldout is not None:
                held_ce = fit_metrics(_log_probs(network, heldout), heldout).cross_entropy
            curve.append(
                CurvePoint(step=step, train_loss=running / count, heldout_cross_entropy=held_ce)
            )
            running, count = 0.0, 0
        if progress and (step % tick == 0 or step == config.steps):
            progress(step, config.steps)
    network.eval()
    return curve
