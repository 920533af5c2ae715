"""How big a config's game tree can get, computed from the spec alone (before any LLM call).

Each field of a config is bounded on its own, but the tree multiplies them: every message is
a decision over A instructions followed by S sampled replies, for up to R x N messages (R
replies per player, N players; fewer where the config lists its `turns`, whose instruction
sets A_d then differ by depth), so the last level alone has (A S)^(R N) nodes (with samples
per depth, `num_llm_seeds: [S0, S1, ...]`, the product of A S_d over the depths: the cost is
linear in each entry). `tree_size` counts the worst case exactly (no dialogue ended early by a
termination check or a verdict): what `expand` would visit and ask when nothing ends before the
reply limit. Runs print it and refuse a run past a call bound unless the user raises the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gtsteer.binding.spec import DomainSpec


@dataclass(frozen=True)
class TreeSize:
    """Worst-case counts for one game (one instance, all its deals)."""

    decision_nodes: int
    chance_nodes: int
    terminal_nodes: int
    message_calls: int
    end_check_calls: int
    reward_calls: int

    @property
    def nodes(self) -> int:
        return self.decision_nodes + self.chance_nodes + self.terminal_nodes

    @property
    def llm_calls(self) -> int:
        """Every request expansion may make: messages, end checks and one reward per terminal
        (a domain whose utility needs no extraction makes fewer)."""
        return self.message_calls + self.end_check_calls + self.reward_calls


def tree_size(spec: DomainSpec) -> TreeSize:
    """The worst-case size of one instance's game under `spec` (see the module docstring)."""
    limit = spec.reply_limit
    deals = spec.num_deals
    decision = chance = messages = checks = 0
    before = 1  # histories that reach the message
    for reply in range(1, limit + 1):
        samples = spec.samples_at(reply - 1)
        actions = len(spec.legal_instructions(reply - 1))
        decision += before
        chance += before * actions
        messages += before * actions * samples
        if spec.end_check_after(reply):
            checks += before * actions * samples
        before *= actions * samples
    terminals = before
    return TreeSize(
        decision_nodes=deals * decision,
        chance_nodes=deals * chance + (1 if deals > 1 else 0),  # the root deal node
        terminal_nodes=deals * terminals,
        message_calls=deals * messages,
        end_check_calls=deals * checks,
        reward_calls=deals * terminals,
    )


def short(n: int) -> str:
    """A count as people read it: 1,234 below a million, 1.2e+09 above (any size of int)."""
    if n < 1_000_000:
        return f"{n:,}"
    exponent = math.floor(math.log10(n))
    return f"{10 ** (math.log10(n) - exponent):.1f}e+{exponent:02d}"
