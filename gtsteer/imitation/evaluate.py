"""How good is the distilled policy in the game itself? Exact values on each instance's tree.

Per instance: NashConv of the distilled policy (which no reference reports) beside the CFR
policy's, the head-to-head table of DIM (distilled), CFR and `any` (unguided), DIM's gain over
`any` (the CFR gain formula with DIM in CFR's place) and the DIM-vs-LLM meta-game. Across
instances: mean and 95% t-interval of each, and the meta-game of the mean payoffs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyspiel
from pydantic import BaseModel

from gtsteer.imitation.dataset import DecisionRecord
from gtsteer.imitation.metagame import MetaGame, meta_game
from gtsteer.imitation.policy import DistilledPolicy
from gtsteer.solvers.cfr import PolicyTable, cached_tree
from gtsteer.solvers.evaluate import expected_returns, fixed, tabular
from gtsteer.solvers.metrics import Metric, cfr_gain, deviation_values, head_to_head
from gtsteer.solvers.metrics import nash_conv as os_nash_conv


class InstanceEvaluation(BaseModel):
    instance: int
    #: NashConv of the distilled policy (sum over players of best-response gains).
    nash_conv: float
    nash_conv_cfr: float
    #: [row][col]: mean over players i of V_i(i plays row, others col); rows dim, cfr, any.
    head_to_head: dict[str, dict[str, float]]
    #: mean_i V_i(i plays DIM, others any) - V_i(all any); `cfr_gain` the same for CFR.
    dim_gain: float
    cfr_gain: float
    metagame: MetaGame


class EvaluationSummary(BaseModel):
    instances: list[int]  # order of every per_instance list
    nash_conv: Metric
    nash_conv_cfr: Metric
    dim_gain: Metric
    cfr_gain: Metric
    value_dim_vs_any: Metric
    value_dim_vs_cfr: Metric
    #: Equilibrium P(DIM) of each instance's meta-game, mean and 95% t-interval clipped to [0, 1].
    dim_probability: Metric
    #: The meta-game of payoffs averaged over instances (one equilibrium, no interval).
    pooled_metagame: MetaGame
    head_to_head: dict[str, dict[str, float]]  # mean over instances


def distilled_table(
    game: pyspiel.Game,
    policy: DistilledPolicy,
    records: Sequence[DecisionRecord],
    embeddings: np.ndarray | None = None,
) -> PolicyTable:
    """The distilled policy at every record's information state, as action ids of `game`.

    `embeddings` (rows aligned with `records`) avoids asking the embedder again."""
    table: PolicyTable = {}
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(tuple(r.actions), []).append(i)
    for actions, rows in groups.items():
        feats = (
            np.asarray([records[i].features for i in rows], float)
            if policy.config.uses_features
            else None
        )
        probs = policy.probs_batch(
            [records[i].text for i in rows],
            feats,
            list(actions),
            embeddings=None if embeddings is None else embeddings[rows],
        )
        for i, row in zip(rows, probs, strict=True):
            labels = game.instructions(records[i].player)
            table[records[i].metadata["info_state"]] = [
                (labels.index(a), float(p)) for a, p in zip(actions, row, strict=True)
            ]
    return table


def cfr_table(game: pyspiel.Game, records: Sequence[DecisionRecord]) -> PolicyTable:
    """The records' targets (the CFR policy) as a table of `game`'s action ids."""
    out: PolicyTable = {}
    for r in records:
        labels = game.instructions(r.player)
        out[r.metadata["info_state"]] = [
            (labels.index(a), p) for a, p in zip(r.actions, r.target, strict=True)
        ]
    return out


def evaluate_instance(
    game: pyspiel.Game,
    policy: DistilledPolicy,
    records: Sequence[DecisionRecord],
    *,
    embeddings: np.ndarray | None = None,
) -> InstanceEvaluation:
    """Exact values of DIM, CFR and `any` on one expanded dialogue game.

    `records` are this instance's records (every information state, as `records_from_game`
    makes them); their targets are the CFR policy."""
    instances = {r.instance for r in records}
    if len(instances) != 1:
        raise ValueError(f"records: expected one instance, got {sorted(instances)}")
    tree = cached_tree(game)
    n = game.num_players()
    dim = distilled_table(game, policy, records, embeddings)
    cfr = cfr_table(game, records)
    strategies = {
        "dim": tabular(dim),
        "cfr": tabular(cfr),
        "any": fixed([int(game.any_action(p)) for p in range(n)]),
    }
    pair = (strategies["dim"], strategies["any"])
    per_player = np.zeros((n, 2, 2))
    for x, sx in enumerate(pair):
        for y, sy in enumerate(pair):
            per_player[:, x, y] = deviation_values(tree, sx, sy)
    joint = None
    if n == 2:
        joint = np.zeros((2, 2, 2))
        for x0, s0 in enumerate(pair):
            for x1, s1 in enumerate(pair):
                joint[:, x0, x1] = expected_returns(tree, [s0, s1])
    return InstanceEvaluation(
        instance=instances.pop(),
        nash_conv=os_nash_conv(tree, dim),
        nash_conv_cfr=os_nash_conv(tree, cfr),
        head_to_head=head_to_head(tree, strategies),
        dim_gain=float(np.mean(cfr_gain(tree, strategies["dim"], strategies["any"]))),
        cfr_gain=float(np.mean(cfr_gain(tree, strategies["cfr"], strategies["any"]))),
        metagame=meta_game(per_player, joint),
    )


def _metric(values: list[float], bounds: tuple[float, float] | None = None) -> Metric:
    """Mean and t-interval; `bounds` clips the interval to a quantity's range (a probability's
    symmetric t-interval can otherwise reach below 0 or above 1 with few instances)."""
    m = Metric.of(values)
    if bounds is not None and m.ci_low is not None and m.ci_high is not None:
        m.ci_low, m.ci_high = max(m.ci_low, bounds[0]), min(m.ci_high, bounds[1])
    return m


def summarize(evaluations: Sequence[InstanceEvaluation]) -> EvaluationSummary:
    """Means and 95% intervals over instances; raises on an empty list."""
    if not evaluations:
        raise ValueError("evaluations: no instance to summarise (empty held-out set?)")
    ev = list(evaluations)
    names = list(ev[0].head_to_head)
    pooled = np.mean([e.metagame.per_player for e in ev], axis=0)
    joints = [e.metagame.joint for e in ev if e.metagame.joint is not None]
    pooled_joint = np.mean(joints, axis=0) if len(joints) == len(ev) else None
    return EvaluationSummary(
        instances=[e.instance for e in ev],
        nash_conv=_metric([e.nash_conv for e in ev]),
        nash_conv_cfr=_metric([e.nash_conv_cfr for e in ev]),
        dim_gain=_metric([e.dim_gain for e in ev]),
        cfr_gain=_metric([e.cfr_gain for e in ev]),
        value_dim_vs_any=_metric([e.head_to_head["dim"]["any"] for e in ev]),
        value_dim_vs_cfr=_metric([e.head_to_head["dim"]["cfr"] for e in ev]),
        dim_probability=_metric([e.metagame.dim_probability for e in ev], bounds=(0.0, 1.0)),
        pooled_metagame=meta_game(pooled, pooled_joint),
        head_to_head={
            r: {c: float(np.mean([e.head_to_head[r][c] for e in ev])) for c in names}
            for r in names
        },
    )
