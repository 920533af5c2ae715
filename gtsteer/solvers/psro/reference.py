"""PSRO's meta-strategy played in a reference game whose action set is known in full.

PSRO on a game that starts with few instructions (meeting by day with `any` alone) has to
discover the others. Where the full game exists (every day an action), how far the run got is
measurable exactly: each iteration's meta-strategy is played in the full game of the same
instance, every player mixing its restricted instructions at each of its decisions, and its
NashConv there, its gain over `any` beside the full game's CFR gain and the best lone
deviation from `any`, and its gain on fresh samples are reported. docs/PSRO.md ("Measured in
the full game") defines them and says why the CFR gain alone is no yardstick. A meta-strategy
reads no text (a fixed mix at every decision), so on fresh samples it is replayed exactly.

Library code (no file is written); `gtsteer.runs.psro` is its driver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyspiel
from pydantic import BaseModel, Field

from gtsteer.binding import DialogueGame, DialogueState, ExpansionError, expand_sync
from gtsteer.solvers.cfr import PolicyTable, cached_tree, policy_table
from gtsteer.solvers.evaluate import Strategy, expected_returns, fixed, tabular
from gtsteer.solvers.metrics import cfr_gain, nash_conv
from gtsteer.solvers.psro.candidates import canonical

#: Instructions the meta-strategy plays with at most this probability are left out (and the
#: rest renormalised), as PSRO's own `support_tolerance` leaves them out when it scores.
SUPPORT_TOLERANCE = 1e-4


class ReferenceGame:
    """One instance's full game, expanded and solved once (CFR), and optionally the same
    instance on fresh samples (expanded along what each measured meta-strategy needs)."""

    def __init__(self, game: DialogueGame, cfr: PolicyTable, fresh: DialogueGame | None = None):
        self.game = game
        self.tree = cached_tree(game)
        self.cfr = cfr
        self.fresh = fresh
        n = game.num_players()
        any_actions = [game.any_action(p) for p in range(n)]
        self.any_ = fixed(any_actions)
        self.cfr_gain = float(np.mean(cfr_gain(self.tree, tabular(cfr), self.any_)))
        on_any = policy_table(self.tree, lambda state: [
            (a, float(a == any_actions[state.current_player()])) for a in state.legal_actions()])
        self.best_gain = nash_conv(self.tree, on_any) / n


class ReferencePoint(BaseModel):
    """One instance: the meta-strategy in its full game."""

    instance: int
    nash_conv: float
    gain: float  # mean over players of V_i(meta-strategy, others `any`) - V_i(all `any`)
    cfr_gain: float  # the full game's CFR gain on the same tree
    best_gain: float  # mean over players of the best response to `any`, minus V_i(all `any`)
    fresh_gain: float | None = None  # `gain` on fresh samples of the same positions


class ReferenceReport(BaseModel):
    """An iteration's meta-strategy (`concept`, the driver's) in the reference game, over
    instances. Without numbers (`unmapped` non-empty) where the meta-strategy plays an
    instruction the reference game does not have."""

    concept: str
    #: Per player, the reference game's instructions measured and their (renormalised)
    #: probabilities.
    played: list[dict[str, float]] = Field(default_factory=list)
    #: Labels played that are a reference instruction in other words (case, punctuation:
    #: "tuesday" -> "Tuesday"), and which one each was measured as.
    renamed: dict[str, str] = Field(default_factory=dict)
    unmapped: list[str] = Field(default_factory=list)
    nash_conv: float | None = None
    gain: float | None = None
    cfr_gain: float | None = None
    best_gain: float | None = None
    #: gain / cfr_gain and gain / best_gain (means over instances); None where the
    #: reference gains nothing.
    cfr_share: float | None = None
    best_share: float | None = None
    fresh_gain: float | None = None
    fresh_cfr_share: float | None = None
    fresh_best_share: float | None = None
    per_instance: list[ReferencePoint] = Field(default_factory=list)


class ConstantReference(BaseModel):
    """The best *constant* mixture of the full game: per player, one mixture of its
    instructions played on every instance (others on `any`), chosen for the highest mean gain
    over `any` on the solved samples. A player's gain is linear in its own mixture, so the best
    is a single instruction: the one whose mean in-sample gain is highest. This is the bar a
    PSRO meta-strategy (also one mixture for every instance) can reach, unlike per-instance
    CFR, which knows each instance's private information. Its fresh value is the same choice
    replayed on fresh samples (chosen in-sample, so it carries no selection on fresh noise)."""

    #: Per player, the instruction chosen.
    played: list[str]
    #: Per player, each instruction's mean in-sample gain over `any` across instances.
    gains: list[dict[str, float]]
    gain: float  # mean over players of the chosen instruction's mean in-sample gain
    fresh_gain: float | None = None
    per_instance: list[ReferencePoint] = Field(default_factory=list)


def best_constant(references: Sequence[ReferenceGame], progress: bool = False
                  ) -> ConstantReference:
    """The best constant mixture over every instruction of the full game (`ConstantReference`),
    in-sample on each reference tree and, where the references have fresh games, on fresh
    samples."""
    first = references[0].game
    n = first.num_players()
    names = [first.instructions(p) for p in range(n)]
    any_actions = [first.any_action(p) for p in range(n)]
    per_ref: list[list[list[float]]] = []  # [reference][player][action]: gain over `any`
    for ref in references:
        base = expected_returns(ref.tree, [ref.any_] * n)
        gains = []
        for p in range(n):
            row = []
            for a in range(len(names[p])):
                joint: list[Strategy] = [ref.any_] * n
                joint[p] = fixed([a if q == p else any_actions[q] for q in range(n)])
                row.append(float(expected_returns(ref.tree, joint)[p] - base[p]))
            gains.append(row)
        per_ref.append(gains)
    means = [np.mean([g[p] for g in per_ref], axis=0) for p in range(n)]
    chosen = [int(np.argmax(m)) for m in means]  # the first of equal means: a fixed choice
    mix = {p: [(chosen[p], 1.0)] for p in range(n)}
    points = []
    for ref, gains in zip(references, per_ref, strict=True):
        gain = float(np.mean([gains[p][chosen[p]] for p in range(n)]))
        point = ReferencePoint(instance=ref.game.instance.index, nash_conv=0.0, gain=gain,
                               cfr_gain=ref.cfr_gain, best_gain=ref.best_gain)
        if ref.fresh is not None:
            point.fresh_gain = _fresh_gain(ref.fresh, mix, progress)
        point.nash_conv = nash_conv(ref.tree, policy_table(ref.tree, lambda state: [
            (a, float(a == chosen[state.current_player()])) for a in state.legal_actions()]))
        points.append(point)
    fresh = [pt.fresh_gain for pt in points]
    return ConstantReference(
        played=[names[p][chosen[p]] for p in range(n)],
        gains=[{label: float(m) for label, m in zip(names[p], means[p], strict=True)}
               for p in range(n)],
        gain=float(np.mean([pt.gain for pt in points])),
        fresh_gain=None if None in fresh else float(np.mean(fresh)),  # type: ignore[arg-type]
        per_instance=points)


def measure_in_reference(references: Sequence[ReferenceGame],
                         marginals: Sequence[Mapping[str, float]], concept: str,
                         progress: bool = False) -> ReferenceReport:
    """`marginals` (per player, instruction -> probability) played in every reference game.
    A label is measured as the reference instruction it equals, else as the one with its
    canonical form (`candidates.canonical`: case, whitespace, punctuation and filler words
    ignored), so a proposer's "tuesday" or "Tuesday." is the full game's "Tuesday"."""
    supports = [_support(m) for m in marginals]
    names = [references[0].game.instructions(p) for p in range(len(supports))]
    renamed: dict[str, str] = {}
    unmapped: set[str] = set()
    played: list[dict[str, float]] = []
    for p, support in enumerate(supports):
        by_form = {canonical(a): a for a in names[p]}
        mapped: dict[str, float] = {}
        for label, prob in support.items():
            target = label if label in names[p] else by_form.get(canonical(label))
            if target is None:
                unmapped.add(label)
                continue
            if target != label:
                renamed[label] = target
            mapped[target] = mapped.get(target, 0.0) + prob
        played.append(mapped)
    report = ReferenceReport(concept=concept, played=played, renamed=renamed,
                             unmapped=sorted(unmapped))
    if unmapped:
        return report
    # one spec, so one action id per instruction in every reference game
    mix = {p: [(names[p].index(label), prob) for label, prob in m.items()]
           for p, m in enumerate(played)}

    def every_action(state: pyspiel.State) -> list[tuple[int, float]]:
        probs = dict(mix[state.current_player()])  # OpenSpiel's tables list every legal action
        return [(a, probs.get(a, 0.0)) for a in state.legal_actions()]

    points = []
    for ref in references:
        table = policy_table(ref.tree, every_action)
        point = ReferencePoint(
            instance=ref.game.instance.index,
            nash_conv=nash_conv(ref.tree, table),
            gain=float(np.mean(cfr_gain(ref.tree, tabular(table), ref.any_))),
            cfr_gain=ref.cfr_gain, best_gain=ref.best_gain)
        if ref.fresh is not None:
            point.fresh_gain = _fresh_gain(ref.fresh, mix, progress)
        points.append(point)
    report.per_instance = points

    def mean(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else float(np.mean(values))  # type: ignore[arg-type]

    report.nash_conv = mean([p.nash_conv for p in points])
    report.gain = mean([p.gain for p in points])
    report.cfr_gain = mean([p.cfr_gain for p in points])
    report.best_gain = mean([p.best_gain for p in points])
    report.fresh_gain = mean([p.fresh_gain for p in points])
    report.cfr_share = _share(report.gain, report.cfr_gain)
    report.best_share = _share(report.gain, report.best_gain)
    report.fresh_cfr_share = _share(report.fresh_gain, report.cfr_gain)
    report.fresh_best_share = _share(report.fresh_gain, report.best_gain)
    return report


def _share(gain: float | None, reference: float | None) -> float | None:
    return None if gain is None or reference is None or reference <= 0 else gain / reference


def _support(marginal: Mapping[str, float]) -> dict[str, float]:
    kept = {label: float(p) for label, p in marginal.items() if p > SUPPORT_TOLERANCE}
    total = sum(kept.values())
    return {label: p / total for label, p in kept.items()}


def _fresh_gain(fresh: DialogueGame, mix: Mapping[int, list[tuple[int, float]]],
                progress: bool) -> float:
    """The meta-strategy's gain over `any` on the fresh tree, expanding only the profiles it
    needs: everyone on `any`, or one player on its mix and the others on `any`."""
    n = fresh.num_players()
    any_actions = [fresh.any_action(p) for p in range(n)]
    allowed = [{a for a, _ in mix[p]} | {any_actions[p]} for p in range(n)]

    def follow(state: DialogueState) -> list[int]:
        player = state.current_player()
        walk = fresh.new_initial_state()
        moves: list[list[int]] = [[] for _ in range(n)]
        for action in state.history():
            if not walk.is_chance_node():
                moves[walk.current_player()].append(action)
            walk.apply_action(action)
        out: set[int] = set()
        for i in range(n):
            if set(moves[i]) <= allowed[i] and all(set(moves[q]) <= {any_actions[q]}
                                                   for q in range(n) if q != i):
                out |= allowed[player] if i == player else {any_actions[player]}
        return sorted(out)

    report = expand_sync(fresh, progress=progress, follow=follow)
    if report.failed:
        raise ExpansionError(f"reference game on fresh samples: {report.reason}")

    def meta(state: pyspiel.State) -> list[tuple[int, float]]:
        return mix[state.current_player()]

    any_ = fixed(any_actions)
    base = expected_returns(fresh, [any_] * n)
    gains = []
    for i in range(n):
        joint: list[Strategy] = [any_] * n
        joint[i] = meta
        gains.append(float(expected_returns(fresh, joint)[i] - base[i]))
    return float(np.mean(gains))
