"""gtsteer.imitation: distil a solved game's equilibrium into a small network over text.

    from gtsteer.imitation import DecisionRecord, TrainConfig, train_policy, DistilledPolicy
    policy, report = train_policy(records, get_embedder(), TrainConfig(steps=2000))
    policy.probs("Alice (proposer) holds ...")      # {"calm": 0.7, "assertive": 0.2, ...}

Everything imported here is free of pyspiel, so Werewolf steering can use it alone (`Advisor`,
which reads dialogue configs, is resolved on first use like `train_policy` below). Solved
dialogue games become records in `gtsteer.imitation.build`; the OpenSpiel `Policy` adapter is
`gtsteer.imitation.pyspiel_policy`; held-out evaluation and the DIM-vs-LLM meta-game are in
`gtsteer.imitation.evaluate` and `gtsteer.imitation.metagame`.

Nothing here imports torch until a network is built, trained, loaded or run: `train_policy` is
resolved on first use (PEP 562), so importing the package (the CLI, the Werewolf server) does
not pay torch's seconds and ~200 MiB.
"""

from typing import TYPE_CHECKING, Any

from gtsteer.imitation.dataset import (
    DatasetError,
    DecisionRecord,
    action_labels,
    read_records,
    records_to_jsonl,
    split_instances,
)
from gtsteer.imitation.dialogue import Dialogue, Line
from gtsteer.imitation.policy import (
    ActionSetMismatchError,
    DistilledPolicy,
    PolicyConfig,
    PolicyError,
    PolicyInput,
)
from gtsteer.imitation.train_types import FitMetrics, TrainConfig, TrainReport

if TYPE_CHECKING:
    from gtsteer.imitation.advisor import Advisor
    from gtsteer.imitation.train import train_policy

#: Public names whose modules import torch, and the module each lives in.
_TORCH_BACKED = {"train_policy": "gtsteer.imitation.train"}
#: Public names whose modules import pyspiel (through the binding), resolved on first use too.
_PYSPIEL_BACKED = {"Advisor": "gtsteer.imitation.advisor"}
_LAZY = {**_TORCH_BACKED, **_PYSPIEL_BACKED}

__all__ = [
    "ActionSetMismatchError",
    "Advisor",
    "DatasetError",
    "DecisionRecord",
    "Dialogue",
    "DistilledPolicy",
    "FitMetrics",
    "Line",
    "PolicyConfig",
    "PolicyError",
    "PolicyInput",
    "TrainConfig",
    "TrainReport",
    "action_labels",
    "read_records",
    "records_to_jsonl",
    "split_instances",
    "train_policy",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        if name in _TORCH_BACKED:
            from gtsteer.imitation.extra import require_imitate

            require_imitate()  # one line naming the `imitate` extra, not an ImportError
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
