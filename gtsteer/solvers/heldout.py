"""Held-out CFR gain: the solved policy replayed on fresh LLM samples of the same positions.
A metric (beside `solvers.metrics`) that writes no file; `runs/solve.py` is its driver.

The paper's CFR gain is measured on the very samples CFR optimised over, so with a few samples
per message an instruction whose samples happened to score well looks better than it is. Here
the same instance is built again with every message seeded as sample i + num_llm_seeds (samples
the solver never saw), the CFR policy is replayed position by position (`Replayed`: same action
history, same information state in the solved tree) and the gain is measured there. Selection
on sampling noise does not survive that; an effect of the instructions does. In a dealt game
the replayed player mixes its solved policies over the deals it cannot tell apart: in the
solved tree the other player's words often reveal the deal (a guilty suspect's reply differs
from an innocent one's), and replaying by history alone would hand it the deal itself.

Only the branches the gain needs are expanded: at a player's decision, `any` where the path
so far is the baseline's or another player's deviation, and the replayed policy's support
where it is this player's own deviation (the others on `any`, its own choices in its support).
"""

from __future__ import annotations

import numpy as np
import pyspiel
from pydantic import BaseModel

from gtsteer.binding import DialogueGame, DialogueState, expand_sync
from gtsteer.solvers.cfr import PolicyTable
from gtsteer.solvers.evaluate import (
    Indistinct,
    Replayed,
    expected_returns,
    fixed,
    truncated,
)
from gtsteer.solvers.metrics import cfr_gain

#: Actions the CFR average policy plays below this probability are not replayed (and their
#: branches not expanded); the value error is at most that mass times the payoff range.
SUPPORT_TOLERANCE = 1e-3


class HeldOutGain(BaseModel):
    """`games/<i>.json` `heldout`: the CFR gain on fresh samples of the solved positions."""

    #: Message sample i of the held-out tree is seeded as sample i + sample_offset.
    sample_offset: int
    cfr_gain: float  # mean over players, as the in-sample `values.cfr_gain`
    cfr_gain_normalized: float  # / payoff range
    cfr_gain_per_player: list[float]
    value_any: list[float]  # each player's value when all play `any`, on the fresh samples
    #: Decision positions where the replayed policy was asked to act. The solved tree lacks
    #: some of them (its dialogue ended earlier there): `borrowed` ones played the mean of the
    #: solved policies for the same instructions under the other samples; `unmatched` ones,
    #: with no such position at all, played `any`.
    decisions: int
    borrowed: int
    unmatched: int
    #: Decisions of a dealt game where the player's solved information states differed across
    #: deals it cannot tell apart (its replayed policy mixes them by their chance probability).
    pooled: int = 0
    support_tolerance: float
    new_calls: int  # LLM calls the held-out measurement cost this run (0 when cached)


class HeldOutError(RuntimeError):
    """The held-out tree could not be expanded (a failed model call); the in-sample result
    of the instance is unaffected."""


def same_private_info(game: DialogueGame) -> Indistinct:
    """At the deal node, the deals that give the player the private information of the one
    dealt (an interrogator, who has none, cannot tell a guilty suspect's deal from an innocent
    one's); every other chance outcome is its own."""

    def indistinct(state: pyspiel.State, action: int, player: int) -> list[int]:
        if not state.is_deal_node():
            return [action]
        mine = game.deals[action].private_info[player]
        return [j for j, deal in enumerate(game.deals) if deal.private_info[player] == mine]

    return indistinct


def measure_heldout(
    solved: DialogueGame,
    table: PolicyTable,
    fresh: DialogueGame,
    *,
    support_tolerance: float = SUPPORT_TOLERANCE,
    progress: bool = True,
) -> HeldOutGain:
    """CFR gain of `table` (computed on `solved`) replayed on `fresh`, the same instance
    built with a `sample_offset` (other LLM samples of the same positions)."""
    if fresh.sample_offset == solved.sample_offset:
        raise ValueError("the held-out game must draw other samples: give it another sample_offset")
    n = fresh.num_players()
    any_actions = [fresh.any_action(p) for p in range(n)]
    baseline = fixed(any_actions)
    # Other message samples may stand in for a missing position; other deals may not (they
    # change what the player privately knows). Deals that give the player the same private
    # information are always mixed: it cannot tell them apart.
    policy = Replayed(truncated(table, support_tolerance), solved, baseline,
                      resample=lambda state: not state.is_deal_node(),
                      indistinct=same_private_info(solved))
    before = fresh.llm.usage

    def support(state: pyspiel.State) -> set[int]:
        return {a for a, p in policy(state) if p > 0.0}

    def follow(state: DialogueState) -> list[int]:
        """The actions some measured profile plays here: everyone `any` (the baseline), or
        one player i on the replayed policy with the others on `any` (i's deviation)."""
        player = state.current_player()
        walk = fresh.new_initial_state()
        moves: list[list[tuple[pyspiel.State, int]]] = [[] for _ in range(n)]
        for action in state.history():
            if not walk.is_chance_node():
                moves[walk.current_player()].append((walk.clone(), action))
            walk.apply_action(action)
        on_any = [all(a == any_actions[p] for _, a in moves[p]) for p in range(n)]
        on_policy = [all(a in support(s) for s, a in moves[p]) for p in range(n)]

        def deviation_reaches(i: int) -> bool:
            return on_policy[i] and all(on_any[p] for p in range(n) if p != i)

        out = set()
        if all(on_any) or any(deviation_reaches(i) for i in range(n) if i != player):
            out.add(any_actions[player])
        if deviation_reaches(player):
            out |= support(state)
        return sorted(out) or [any_actions[player]]

    report = expand_sync(fresh, progress=progress, follow=follow)
    if report.failed:
        raise HeldOutError(f"held-out tree: {report.reason}")
    # Count only what the measurement itself asks of the policy (expansion asked more).
    for seen in (policy.hits, policy.borrowed, policy.misses, policy.pooled):
        seen.clear()
    gains = cfr_gain(fresh, policy, baseline)
    span = fresh.max_utility() - fresh.min_utility()
    gain = float(np.mean(gains))
    return HeldOutGain(
        sample_offset=fresh.sample_offset,
        cfr_gain=gain,
        cfr_gain_normalized=gain / span,
        cfr_gain_per_player=gains,
        value_any=[float(v) for v in expected_returns(fresh, [baseline] * n)],
        decisions=len(policy.hits | policy.borrowed | policy.misses),
        borrowed=len(policy.borrowed),
        unmatched=len(policy.misses),
        pooled=len(policy.pooled),
        support_tolerance=support_tolerance,
        new_calls=fresh.llm.usage.since(before).new_calls,
    )
