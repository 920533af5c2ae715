"""The statistics over instances of `gtsteer solve`'s `summary.json` (its `metrics`,
`heldout_metrics`, `head_to_head` and `instruction_distributions`): each a `Metric` (mean and
95% interval) over the solved instances' values, from the per-instance values the solvers
compute (`gtsteer.solvers.analysis`, `gtsteer.solvers.heldout`). The run's file around them is
`gtsteer.runs.solve_schema`.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from gtsteer.solvers.analysis import GameValues
from gtsteer.solvers.heldout import HeldOutGain, ReplayGain, VersusBaseline
from gtsteer.solvers.metrics import Metric


class Metrics(BaseModel):
    #: Sum over players of best-response gain against the CFR average policy (OpenSpiel).
    nash_conv: Metric
    #: nash_conv / (players x (payoff max - payoff min)), in [0, 1] for any number of players.
    nash_conv_normalized: Metric
    #: V_i(i plays CFR, others `any`) - V_i(all `any`), averaged over players i.
    cfr_gain: Metric
    #: cfr_gain / (payoff max - payoff min), in [-1, 1].
    cfr_gain_normalized: Metric
    #: `--heldout`: the CFR gain of the same policies replayed by action history on fresh LLM
    #: samples of the solved positions (per instance in `heldout_instances` order; None
    #: without it). Content-blind after the first message: `heldout_metrics` has the clean
    #: part and the replays that read the fresh text.
    cfr_gain_heldout: Metric | None = None
    cfr_gain_heldout_normalized: Metric | None = None


class DepthMetric(BaseModel):
    """One (player, decision depth) share of a replay's held-out gain, over instances."""

    player: int
    depth: int
    exact: bool  # replayed exactly (nothing sampled before it): the clean estimate
    gain: Metric


class ReplayMetrics(BaseModel):
    """One replay's held-out CFR gain over instances (see `gtsteer.solvers.heldout`)."""

    cfr_gain: Metric  # mean over players
    cfr_gain_normalized: Metric
    per_player: list[Metric]
    by_depth: list[DepthMetric]


class VersusMetric(BaseModel):
    """One player's fresh-sample value with the policy (`replay`) and with a baseline, and
    their paired difference, over instances."""

    player: int
    replay: str
    baseline: str
    others: str = "any"  # what the other players play (`gtsteer.solvers.heldout.OTHERS`)
    policy_value: Metric
    baseline_value: Metric
    gain: Metric


class HeldOutMetrics(BaseModel):
    """`--heldout`, over the instances in `heldout_instances`.

    `clean`: the first mover's opening decision replayed exactly on fresh samples (its later
    decisions and the other players on `any`): the clean estimate. `replays["history"]`
    replays every decision by action history, blind to the fresh text after the first
    message; the other replays read the fresh text (`nearest`, `distilled`)."""

    clean_player: int
    clean: Metric
    clean_normalized: Metric
    #: The same share on the solved tree, and in-sample minus fresh per instance: the opening
    #: decision's selection on sampling noise (exact: that decision is replayed exactly).
    clean_in_sample: Metric
    clean_selection: Metric
    replays: dict[str, ReplayMetrics]
    #: The policy's fresh-sample value against each baseline (`any`, `greedy`, `uniform`),
    #: paired per instance (`gtsteer.solvers.heldout.VersusBaseline`).
    versus: list[VersusMetric] = Field(default_factory=list)


class HeadToHead(BaseModel):
    """values[row][col]: mean over instances and players i of V_i(i plays row, others col)."""

    strategies: list[str]
    values: dict[str, dict[str, float]]


class InstructionDistribution(BaseModel):
    """P(first instruction) of one player under the CFR policy, chance-weighted, mean over
    instances."""

    player: int
    role: str
    probs: dict[str, float]



def replay_metrics(gains: list[ReplayGain | HeldOutGain]) -> ReplayMetrics:
    players = len(gains[0].cfr_gain_per_player)
    cells = [(d.player, d.depth, d.exact) for d in gains[0].by_depth]
    return ReplayMetrics(
        cfr_gain=Metric.of([g.cfr_gain for g in gains]),
        cfr_gain_normalized=Metric.of([g.cfr_gain_normalized for g in gains]),
        per_player=[Metric.of([g.cfr_gain_per_player[p] for g in gains]) for p in range(players)],
        by_depth=[DepthMetric(player=p, depth=d, exact=exact,
                              gain=Metric.of([g.by_depth[k].gain for g in gains]))
                  for k, (p, d, exact) in enumerate(cells)],
    )


def heldout_metrics(held: list[HeldOutGain]) -> HeldOutMetrics:
    """Over instances: the clean estimate, and each replay per player and depth."""
    names = [name for name in held[0].readers if all(name in h.readers for h in held)]
    replays: dict[str, ReplayMetrics] = {"history": replay_metrics(list(held))}
    replays |= {name: replay_metrics([h.readers[name] for h in held]) for name in names}
    return HeldOutMetrics(
        clean_player=held[0].clean_player,
        clean=Metric.of([h.clean_gain for h in held]),
        clean_normalized=Metric.of([h.clean_gain_normalized for h in held]),
        clean_in_sample=Metric.of([h.clean_gain_in_sample for h in held]),
        clean_selection=Metric.of([h.clean_gain_in_sample - h.clean_gain for h in held]),
        replays=replays,
        versus=versus_metrics(held),
    )


def versus_metrics(held: list[HeldOutGain]) -> list[VersusMetric]:
    """Each (player, replay, baseline, others) comparison that every instance measured
    (`greedy` is missing where the domain named no action of an instance)."""
    def cells(h: HeldOutGain) -> dict[tuple[int, str, str, str], VersusBaseline]:
        return {(v.player, v.replay, v.baseline, v.others): v for v in h.versus}

    per = [cells(h) for h in held]
    out = []
    for key in per[0]:
        if all(key in c for c in per):
            rows = [c[key] for c in per]
            out.append(VersusMetric(
                player=key[0], replay=key[1], baseline=key[2], others=key[3],
                policy_value=Metric.of([r.policy_value for r in rows]),
                baseline_value=Metric.of([r.baseline_value for r in rows]),
                gain=Metric.of([r.gain for r in rows])))
    return out


def solved_metrics(solved: list[GameValues]) -> Metrics:
    return Metrics(
        nash_conv=Metric.of([v.nash_conv for v in solved]),
        nash_conv_normalized=Metric.of([v.nash_conv_normalized for v in solved]),
        cfr_gain=Metric.of([v.cfr_gain for v in solved]),
        cfr_gain_normalized=Metric.of([v.cfr_gain_normalized for v in solved]),
    )


def head_to_head(solved: list[GameValues]) -> HeadToHead:
    names = list(solved[0].head_to_head)
    values = {
        r: {c: float(np.mean([v.head_to_head[r][c] for v in solved])) for c in names} for r in names
    }
    return HeadToHead(strategies=names, values=values)


def distributions(solved: list[GameValues], roles: list[str]) -> list[InstructionDistribution]:
    out = []
    for p, role in enumerate(roles):
        labels: list[str] = []
        for v in solved:
            labels += [k for k in v.first_instruction[p] if k not in labels]
        probs = {
            k: float(np.mean([v.first_instruction[p].get(k, 0.0) for v in solved])) for k in labels
        }
        out.append(InstructionDistribution(player=p, role=role, probs=probs))
    return out
