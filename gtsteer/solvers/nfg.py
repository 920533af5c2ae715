"""A normal-form game (one payoff tensor per player) as a Gambit `.nfg` file.

Gambit's strategic-form text, the payoff version with strategy labels (`NFG 1 R`, as
`pygambit.read_nfg` reads it): players and their strategy labels, a comment, then each
profile's payoffs, player 1's strategy changing fastest (Gambit's contingency order). PSRO
writes its meta-game per iteration with this (`gtsteer psro --export-nfg`) so a meta-game can
be re-solved in Gambit; this module only computes the text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from gtsteer.solvers.gambit_text import label, number


def to_nfg(payoffs: np.ndarray | Sequence[object], strategies: Sequence[Sequence[str]],
           *, title: str, players: Sequence[str], comment: str = "") -> str:
    """`payoffs[p][s_0, ..., s_{N-1}]` (shape (N, n_0, ..., n_{N-1})) as `.nfg` text.

    Raises ValueError when the shape does not match the players and strategy labels, or a
    player has two strategies with the same label (Gambit would rename one)."""
    stack = np.asarray(payoffs, dtype=float)
    n = len(players)
    shape = tuple(len(s) for s in strategies)
    if len(strategies) != n or stack.shape != (n, *shape):
        raise ValueError(f"payoffs: expected shape {(n, *shape)} for {n} players with"
                         f" {list(shape)} strategies, got {stack.shape}")
    for p, labels in enumerate(strategies):
        quoted = [label(x) for x in labels]
        if len(set(quoted)) != len(quoted):
            raise ValueError(f"strategies: player {p} ({players[p]}) has two strategies with"
                             f" the same label: {list(labels)}")
    lines = [f"NFG 1 R {label(title)} {{ {' '.join(label(x) for x in players)} }}", ""]
    lines.append("{ " + "\n  ".join("{ " + " ".join(label(x) for x in labels) + " }"
                                    for labels in strategies) + "\n}")
    lines.append(label(comment))
    lines.append("")
    # Gambit's order: the first player's strategy varies fastest.
    for reversed_profile in itertools.product(*(range(k) for k in reversed(shape))):
        profile = tuple(reversed(reversed_profile))
        lines.append(" ".join(number(float(stack[(p, *profile)])) for p in range(n)))
    return "\n".join(lines) + "\n"
