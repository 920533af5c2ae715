"""Synthetic imitation data with known targets, and a deterministic test embedder.

Not a test module. The embedder is a test double for `gtsteer.llm.embed.Embedder`: a text
"s<k> ..." maps to situation k's base vector plus a small text-specific offset, so states of one
situation look alike (as real embeddings of similar texts do) without loading a model.
"""

from __future__ import annotations

import hashlib

import numpy as np

from gtsteer.imitation import DecisionRecord
from gtsteer.llm.embed import Embedder

ACTIONS = ["calm", "assertive", "submissive", "any"]
#: The known target of each situation (what training must recover).
TARGETS = [
    [0.7, 0.2, 0.1, 0.0],
    [0.05, 0.05, 0.8, 0.1],
    [0.25, 0.25, 0.25, 0.25],
]
DIM = 16


def _unit(seed: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


def situation_embedder(
    dim: int = DIM, noise: float = 0.1, name: str = "test-situations"
) -> Embedder:
    def encode(texts: list[str]) -> np.ndarray:
        rows = []
        for t in texts:
            k = int(t.split()[0][1:])
            h = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "big")
            rows.append(_unit(1000 + k, dim) + noise * _unit(h, dim))
        return np.stack(rows)

    return Embedder(name, dim, encode, cache=False)


def synthetic_records(
    instances: int = 10, per_situation: int = 3, features: bool = False
) -> list[DecisionRecord]:
    """Each instance has `per_situation` states of every situation, with varied weights."""
    out = []
    for inst in range(instances):
        for k, target in enumerate(TARGETS):
            for j in range(per_situation):
                out.append(
                    DecisionRecord(
                        text=f"s{k} instance {inst} variant {j}: Alice holds {j + k} apples.",
                        features=(
                            [float(k == 0), float(k == 1), float(k == 2)] if features else None
                        ),
                        actions=ACTIONS,
                        target=target,
                        weight=0.5 + 0.25 * j,
                        instance=inst,
                        player=k % 2,
                    )
                )
    return out
