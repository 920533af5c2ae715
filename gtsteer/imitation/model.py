"""The network: an MLP from (embedding, features) to logits over instruction labels.

The paper's shape (arXiv 2402.01704, Appendix E): two dense hidden layers of 256 with ReLU and a
final dense layer; the softmax is taken over the acting player's instructions only, by masking
the logits of labels that are not among them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np

from gtsteer.imitation.extra import require_imitate

require_imitate()  # torch is the `imitate` extra: without it, one line naming it (exit 2)

import torch  # noqa: E402
from torch import nn  # noqa: E402

#: Added to the logits of labels a player does not have; finite so 0 * log p stays 0.
MASKED_LOGIT = -1e9


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch ops on `n` intra-op threads, then restore the setting.

    The network is small (a 128x384 batch): one thread is as fast as several on an idle machine
    and ~20x faster on a busy one, where OpenMP threads spin waiting for each other."""
    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != before:
            torch.set_num_threads(before)


class PolicyMLP(nn.Module):
    def __init__(self, input_dim: int, num_actions: int, hidden: Sequence[int] = (256, 256)):
        super().__init__()
        layers: list[nn.Module] = []
        width = input_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, num_actions))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unmasked logits, (batch, num_actions)."""
        return self.net(x)


def masked_log_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log softmax over the True entries of `mask` (False entries get ~-1e9)."""
    return torch.log_softmax(logits.masked_fill(~mask, MASKED_LOGIT), dim=-1)


def assemble_inputs(
    mode: str, embeddings: np.ndarray | None, features: np.ndarray | None
) -> np.ndarray:
    """The network input for feature mode "text", "struct" or "both" (embedding first)."""
    parts = []
    if mode in ("text", "both"):
        if embeddings is None:
            raise ValueError(f"features={mode!r} needs text embeddings")
        parts.append(np.asarray(embeddings, np.float32))
    if mode in ("struct", "both"):
        if features is None:
            raise ValueError(f"features={mode!r} needs structured features")
        parts.append(np.asarray(features, np.float32))
    if not parts:
        raise ValueError(f"features: expected text, struct or both, got {mode!r}")
    return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
