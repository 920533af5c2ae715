"""gtsteer.imitation: distil a solved game's equilibrium into a small network over text.

    from gtsteer.imitation import DecisionRecord, TrainConfig, train_policy, DistilledPolicy
    policy, report = train_policy(records, get_embedder(), TrainConfig(steps=2000))
    policy.probs("Alice (proposer) holds ...")      # {"calm": 0.7, "assertive": 0.2, ...}

Everything imported here is free of pyspiel, so Werewolf steering can use it alone. Solved
dialogue games become records in `gtsteer.imitation.build`; the OpenSpiel `Policy` adapter is
`gtsteer.imitation.pyspiel_policy`; held-out evaluation and the DIM-vs-LLM meta-game are in
`gtsteer.imitation.evaluate` and `gtsteer.imitation.metagame`.
"""

from gtsteer.imitation.dataset import (
    DatasetError,
    DecisionRecord,
    action_labels,
    read_records,
    records_to_jsonl,
)
from gtsteer.imitation.policy import (
    ActionSetMismatchError,
    DistilledPolicy,
    PolicyConfig,
    PolicyError,
)
from gtsteer.imitation.train import (
    FitMetrics,
    TrainConfig,
    TrainReport,
    split_instances,
    train_policy,
)

__all__ = [
    "ActionSetMismatchError",
    "DatasetError",
    "DecisionRecord",
    "DistilledPolicy",
    "FitMetrics",
    "PolicyConfig",
    "PolicyError",
    "TrainConfig",
    "TrainReport",
    "action_labels",
    "read_records",
    "records_to_jsonl",
    "split_instances",
    "train_policy",
]
