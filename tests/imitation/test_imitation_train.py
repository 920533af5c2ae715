"""Training, determinism, save/load and bad input of the distilled policy (no pyspiel needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from imitation_helpers import ACTIONS, TARGETS, situation_embedder, synthetic_records

from gtsteer.imitation import (
    ActionSetMismatchError,
    DatasetError,
    DecisionRecord,
    DistilledPolicy,
    PolicyError,
    TrainConfig,
    read_records,
    records_to_jsonl,
    split_instances,
    train_policy,
)

#: Stated bound: after 400 steps the policy is within 0.02 nats (mean KL) of the known targets,
#: on training states and on states of held-out instances alike.
KL_BOUND = 0.02
SHORT = TrainConfig(steps=400, batch=64, holdout=0.2, seed=3, curve_points=8)


def kl(p: list[float], q: list[float]) -> float:
    return sum(a * math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0)


@pytest.fixture(scope="module")
def trained() -> tuple[DistilledPolicy, object]:
    return train_policy(synthetic_records(), situation_embedder(), SHORT)


def test_training_reaches_known_targets(trained) -> None:
    policy, report = trained
    assert report.heldout_instances == split_instances(range(10), 0.2, 3)[1]
    assert len(report.heldout_instances) == 2 and report.heldout is not None
    assert report.train.kl is not None and report.train.kl < KL_BOUND
    assert report.heldout.kl is not None and report.heldout.kl < KL_BOUND
    # The cross-entropy of a perfect fit is the targets' entropy; held-out CE is close to it.
    assert report.heldout.cross_entropy == pytest.approx(report.heldout.target_entropy, abs=0.03)
    # Top-1: situations 0 and 1 have a strict favourite; situation 2 is a four-way tie.
    assert report.heldout.top1 == pytest.approx(1.0)
    # A text of an unseen instance gets its situation's distribution.
    for k, target in enumerate(TARGETS):
        probs = policy.probs(f"s{k} instance 99 variant 7: Alice holds 3 apples.")
        assert list(probs) == ACTIONS
        assert sum(probs.values()) == pytest.approx(1.0)
        assert kl(target, list(probs.values())) < KL_BOUND
    # The curve goes down.
    assert len(report.curve) == 8 and report.curve[-1].step == 400
    assert report.curve[-1].heldout_cross_entropy < report.curve[0].heldout_cross_entropy


def test_same_seed_same_weights_and_numbers(trained) -> None:
    policy, report = trained
    again, report2 = train_policy(synthetic_records(), situation_embedder(), SHORT)
    for (k, a), (k2, b) in zip(
        policy.network.state_dict().items(), again.network.state_dict().items(), strict=True
    ):
        assert k == k2 and torch.equal(a, b)
    assert report.numbers() == report2.numbers()
    other, _ = train_policy(
        synthetic_records(), situation_embedder(), SHORT.model_copy(update={"seed": 4})
    )
    first = next(iter(other.network.state_dict().values()))
    assert not torch.equal(first, next(iter(policy.network.state_dict().values())))


def test_save_load_round_trip_identical_probs(trained, tmp_path: Path) -> None:
    policy, _ = trained
    policy.save(tmp_path / "model")
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["embedder"] == "test-situations" and config["actions"] == ACTIONS
    assert config["features"] == "text" and config["hidden"] == [256, 256]
    loaded = DistilledPolicy.load(tmp_path / "model", embedder=situation_embedder())
    texts = [f"s{k} round trip {j}" for k in range(3) for j in range(2)]
    assert np.array_equal(policy.probs_batch(texts), loaded.probs_batch(texts))
    assert loaded.probs(texts[0]) == policy.probs(texts[0])


def test_restricted_actions_renormalise_and_unknown_ones_fail(trained) -> None:
    policy, _ = trained
    full = policy.probs("s0 x")
    part = policy.probs("s0 x", actions=["assertive", "calm"])
    assert list(part) == ["assertive", "calm"]
    assert part["calm"] / part["assertive"] == pytest.approx(full["calm"] / full["assertive"])
    with pytest.raises(ActionSetMismatchError, match="'angry'"):
        policy.probs("s0 x", actions=["calm", "angry"])


def test_struct_features_alone_reach_targets() -> None:
    records = synthetic_records(features=True)
    config = SHORT.model_copy(update={"features": "struct"})
    policy, report = train_policy(records, None, config)
    assert policy.config.embedder is None and policy.config.feature_dim == 3
    assert report.heldout is not None and report.heldout.kl < KL_BOUND
    probs = policy.probs("ignored", features=[0.0, 1.0, 0.0])
    assert kl(TARGETS[1], list(probs.values())) < KL_BOUND
    with pytest.raises(PolicyError, match="features"):
        policy.probs("no features given")


def test_uniform_weighting_and_zero_weight_states_are_trained() -> None:
    records = [
        r.model_copy(update={"weight": 0.0}) if r.text.startswith("s1") else r
        for r in synthetic_records()
    ]
    _, reach = train_policy(records, situation_embedder(), SHORT)
    _, uniform = train_policy(
        records, situation_embedder(), SHORT.model_copy(update={"weighting": "uniform"})
    )
    # Reach weighting ignores the unreachable situation; uniform weighting learns it too.
    assert uniform.heldout.kl_uniform < KL_BOUND < reach.heldout.kl_uniform


def test_jsonl_round_trip(tmp_path: Path) -> None:
    records = synthetic_records(instances=2, features=True)
    path = tmp_path / "records.jsonl"
    path.write_text(records_to_jsonl(records))
    assert read_records(path) == records
    path.write_text(records_to_jsonl(records[:1]) + '{"text": "x"}\n')
    with pytest.raises(DatasetError, match=r"records.jsonl:2"):
        read_records(path)


# ---- bad input --------------------------------------------------------------------------


def test_empty_dataset_is_an_error() -> None:
    with pytest.raises(DatasetError, match="no decision records"):
        train_policy([], situation_embedder(), SHORT)


@pytest.mark.parametrize(
    ("holdout", "message"),
    [(0.01, "empty held-out set"), (10, "leaves none to train on"), (0.99, "none to train")],
)
def test_holdout_that_empties_a_side_is_an_error(holdout: float, message: str) -> None:
    config = SHORT.model_copy(update={"holdout": holdout})
    with pytest.raises(DatasetError, match=message):
        train_policy(synthetic_records(), situation_embedder(), config)


def test_struct_mode_without_features_is_an_error() -> None:
    config = SHORT.model_copy(update={"features": "struct"})
    with pytest.raises(DatasetError, match="no structured features"):
        train_policy(synthetic_records(), None, config)


def test_record_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="sum to 0.5"):
        DecisionRecord(text="t", actions=["a", "b"], target=[0.25, 0.25], weight=1,
                       instance=0, player=0)
    with pytest.raises(ValueError, match="2 probabilities for 3 actions"):
        DecisionRecord(text="t", actions=["a", "b", "c"], target=[0.5, 0.5], weight=1,
                       instance=0, player=0)
    with pytest.raises(ValueError, match="duplicate"):
        DecisionRecord(text="t", actions=["a", "a"], target=[0.5, 0.5], weight=1,
                       instance=0, player=0)


@pytest.fixture()
def saved(trained, tmp_path: Path) -> Path:
    return trained[0].save(tmp_path / "model")


def test_corrupted_model_dirs_are_named(saved: Path) -> None:
    emb = situation_embedder()
    weights = saved / "model.safetensors"
    blob = weights.read_bytes()
    weights.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(PolicyError, match=r"model.safetensors: corrupted"):
        DistilledPolicy.load(saved, embedder=emb)
    weights.unlink()
    with pytest.raises(PolicyError, match=r"model.safetensors: missing"):
        DistilledPolicy.load(saved, embedder=emb)
    (saved / "config.json").write_text("{not json")
    with pytest.raises(PolicyError, match=r"config.json: corrupted"):
        DistilledPolicy.load(saved, embedder=emb)
    with pytest.raises(PolicyError, match="no such folder"):
        DistilledPolicy.load(saved / "nope", embedder=emb)


def test_weights_that_disagree_with_config_are_named(saved: Path) -> None:
    config = json.loads((saved / "config.json").read_text())
    config["actions"] = ACTIONS[:3]
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(PolicyError, match="weights do not match config.json"):
        DistilledPolicy.load(saved, embedder=situation_embedder())


def test_wrong_embedder_is_named(saved: Path) -> None:
    with pytest.raises(PolicyError, match="trained on 'test-situations'"):
        DistilledPolicy.load(saved, embedder=situation_embedder(name="other"))
    with pytest.raises(PolicyError, match="8-dim"):
        DistilledPolicy.load(saved, embedder=situation_embedder(dim=8))


def test_policy_side_needs_no_pyspiel() -> None:
    """Werewolf steering uses DistilledPolicy without OpenSpiel's Python algorithms or an
    embedder: importing it must not load them. (pyspiel itself loads with any `import gtsteer`,
    which registers the dialogue game, as OpenSpiel's own games register at import.)"""
    import subprocess
    import sys

    code = (
        "import sys, gtsteer.imitation, gtsteer.llm.embed; "
        "print(sorted(m for m in ('open_spiel', 'sentence_transformers', 'torch') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
