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

import numpy as np
import torch  # the `imitate` extra: every way here checks it first (gtsteer.llm.extras)

from gtsteer.imitation.dataset import (
    DatasetError,
    DecisionRecord,
    action_labels,
    check_records,
    feature_dim,
    instances_of,
    split_instances,
)
from gtsteer.imitation.model import PolicyMLP, assemble_inputs, masked_log_probs, torch_threads
from gtsteer.imitation.policy import DistilledPolicy, PolicyConfig, TextEmbedder

# The pydantic types live in a torch-free module (importing them must not load torch);
# re-exported here so `from gtsteer.imitation.train import TrainConfig` keeps working.
from gtsteer.imitation.train_types import CurvePoint, FitMetrics, TrainConfig, TrainReport

#: (steps done, total steps), called about a hundred times per run.
ProgressFn = Callable[[int, int], None]
#: Targets within this of the maximum all count as the target's top choice.
TOP1_TIE = 1e-6


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
    heldout = (
        _Tensors([records[i] for i in held_rows], inputs[held_rows], labels) if held_rows else None
    )
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
