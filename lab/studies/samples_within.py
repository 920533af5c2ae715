"""The within-tree samples study (issue 57, item 5; review science-0832c41, M3): how much of
the first mover's in-sample opening value is selection on sampling noise at S = 2 and 4
opening samples, measured on one tree per instance, so the smaller S cost no model call.

Each instance's tree is expanded once with `num_llm_seeds` per depth, S0 opening samples
(`--samples 8`: `[8, k]`, k the config's own count for later messages; the cost is linear in
S0). For each smaller size k (`--subsets 2,4`), CFR (CFR+, 1000 iterations, as `gtsteer
solve`) is solved again on the tree whose opening message has only a k-subset K of the S0
samples, and the first mover's opening policy it finds is scored twice: on K (in-sample) and
on the S0 - k samples left out (the same tree's samples CFR never saw at that opening). Both
are the first mover's value with its opening policy, every later decision and every other
player on `any` (the clean estimate of `gtsteer solve --heldout`), minus the same with `any`
at the opening on the same samples: so *selection* (in-sample minus left-out gain) compares
gains, each over `any` on its own samples. The left-out value is also compared with the
domain's `greedy` opening on the left-out samples. The subsets are every k-subset of the S0
samples (`--draws 0`, the default: 28 + 70 CFR solves at S0 = 8, under a minute an instance),
or `--draws N` seeded random partitions of them into S0 // k disjoint k-subsets; an instance's
numbers are means over its subsets, and the intervals are 95% Student-t over instances.

Why restricting the tree is exact. The opening message's chance node has S0 outcomes, each
sample index i at probability 1 / S0; message seeds and every history key depend on the
sample indices only (`DialogueGame.message_request`), so the tree restricted to the samples K
is the game whose opening chance node offers the outcomes K, each at 1 / |K| (the chance
probabilities renormalised over the kept samples), with every other node unchanged.
`OpeningSubset` is that game: a `DialogueGame` whose states (`OpeningSubsetState`) answer the
opening chance node with K alone, sharing the full tree's messages, end checks and rewards
(keyed by the same histories), so solving it calls no model; `pyspiel.convert_to_cached_tree`
and CFR see an ordinary game. A policy's value on the samples L is the mean over i in L of its
value after sample i, so every number here is a mixture of one table per instance: the first
mover's value after (deal d, opening instruction a, opening sample i), `any` after
(`opening_values`, saved with the record), weighted by the deal's probability and the
policy's. A dealt game (`--deals`) keeps its deals whole; only the opening samples are split.

Each finished instance is saved as `<results>/instances/<i>.json` at once, and a rerun keeps
it (same spec, instance, model, sizes, draws, solver: its key), so an interrupted run
continues where it stopped and a finished one makes no model call; `--render-only` writes the
section from the saved files alone. `--dry-run` prints the worst-case requests of the S0 tree
and stops before any model call.

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab samples-within \\
        gtsteer/configs/schedule_meeting_dow.yaml --games 20 --samples 8 --subsets 2,4 \\
        --results docs/data/samples_within_meeting --ray local --workers 2 --quiet
"""

from __future__ import annotations

import itertools
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gtsteer.binding import (
    DialogueGame,
    DialogueState,
    expand_sync,
    generate_instances,
    make_game,
)
from gtsteer.binding.instances import Instance, stable_int
from gtsteer.binding.spec import DomainSpec, parse_spec
from gtsteer.binding.tree_size import short, tree_size
from gtsteer.domains import load_spec
from gtsteer.domains.load import bind
from gtsteer.llm import LLM
from gtsteer.runs.context import RunContext
from gtsteer.runs.executor import Executor
from gtsteer.runs.output import write_json
from gtsteer.runs.units import RayOptions
from gtsteer.solvers.cfr import DEFAULT_ITERATIONS, DEFAULT_SOLVER, PolicyTable, solve_cfr
from gtsteer.solvers.heldout import greedy_instruction
from gtsteer.solvers.metrics import MeanCI, mean_ci
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_relative
from lab.studies.table1 import ci, mde_text

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab samples-within"
#: Bumped when a saved instance's meaning changes (its key then differs: measured again).
SCHEMA = 1
#: `--draws 0` (every subset) refused past this many subsets of one size (CFR solves).
MAX_SUBSETS = 200


def section(domain: str) -> str:
    """The doc section of one config's study."""
    return f"samples_within_{domain}"


# ---- the restricted tree -------------------------------------------------------------------


class OpeningSubsetState(DialogueState):
    """A state of `OpeningSubset`: the opening message's chance node offers the kept samples
    only, each at 1 / len(kept); every other node is the full game's."""

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self.is_deal_node() or self.replies > 0:
            return super().chance_outcomes()
        kept = self.get_game().kept
        return [(i, 1.0 / len(kept)) for i in kept]


class OpeningSubset(DialogueGame):
    """`full` with its opening message restricted to the samples `kept` (the module docstring
    says why this is exact). It shares `full`'s tables, so an expanded `full` makes it call no
    model."""

    def __init__(self, full: DialogueGame, kept: Sequence[int]):
        samples = full.spec.samples_at(0)
        if not kept or len(set(kept)) != len(kept) or not set(kept) <= set(range(samples)):
            raise ValueError(f"kept: distinct opening samples of 0..{samples - 1}, got {kept}")
        super().__init__(full.spec, full.instance, full.llm, full.get_parameters())
        self.kept = sorted(kept)
        self.messages, self.terminations = full.messages, full.terminations
        self.verdicts, self.rewards, self.echoes = full.verdicts, full.rewards, full.echoes

    def new_initial_state(self) -> OpeningSubsetState:
        return OpeningSubsetState(self)


# ---- values --------------------------------------------------------------------------------


def deal_roots(game: DialogueGame) -> list[tuple[float, DialogueState]]:
    """Each deal's probability and the first mover's opening decision under it."""
    root = game.new_initial_state()
    if not root.is_deal_node():
        return [(1.0, root)]
    return [(p, root.child(d)) for d, p in root.chance_outcomes()]


def _on_any(state: Any, player: int) -> float:
    """`player`'s value from `state` on with every decision on `any`."""
    if state.is_terminal():
        return float(state.returns()[player])
    if state.is_chance_node():
        return sum(p * _on_any(state.child(i), player) for i, p in state.chance_outcomes())
    return _on_any(state.child(state.get_game().any_action(state.current_player())), player)


def opening_values(game: DialogueGame) -> list[list[list[float]]]:
    """[deal][opening instruction][opening sample]: the first mover's value after that deal,
    its opening instruction and that sample of the message, every later decision (its own and
    the others') on `any`."""
    first = game.first_player
    return [[[_on_any(state.child(a).child(i), first)
              for i, _ in state.child(a).chance_outcomes()]
             for a in state.legal_actions()]
            for _, state in deal_roots(game)]


def opening_policy(game: DialogueGame, table: PolicyTable) -> list[list[float]]:
    """[deal][instruction]: the first mover's opening distribution in `table` under each deal."""
    out = []
    for _, state in deal_roots(game):
        probs = dict(table[state.information_state_string()])
        out.append([probs.get(a, 0.0) for a in state.legal_actions()])
    return out


def value(values: list[list[list[float]]], weights: Sequence[float],
          policy: list[list[float]], samples: Sequence[int]) -> float:
    """The first mover's value playing `policy` at its opening (`any` after) on the opening
    samples `samples` (each equally likely), from `opening_values`' table."""
    return sum(w * p * sum(values[d][a][i] for i in samples) / len(samples)
               for d, w in enumerate(weights) for a, p in enumerate(policy[d]) if p > 0.0)


def pure(actions: Sequence[int], width: int) -> list[list[float]]:
    """The opening policy playing `actions[d]` under deal d."""
    return [[float(a == pick) for a in range(width)] for pick in actions]


def subsets(samples: int, size: int, draws: int, seed: int) -> list[list[int]]:
    """`draws` seeded random partitions of range(samples) into samples // size disjoint
    `size`-subsets (concatenated); `draws` 0: every `size`-subset."""
    if not 1 <= size < samples:
        raise ValueError(f"subset size {size}: must be 1 .. {samples - 1} (some samples must"
                         f" be left out of {samples})")
    if draws == 0:
        return [list(c) for c in itertools.combinations(range(samples), size)]
    out = []
    for draw in range(draws):
        order = list(range(samples))
        random.Random(stable_int("samples-within", seed, size, draw)).shuffle(order)
        out += [sorted(order[j:j + size]) for j in range(0, samples - samples % size, size)]
    return out


# ---- one instance --------------------------------------------------------------------------


class SubsetScore(BaseModel):
    """One CFR solve on the opening samples `kept`, scored in-sample and on the rest."""

    kept: list[int]
    #: [deal][instruction]: the first mover's opening policy CFR found on `kept`.
    opening: list[list[float]]
    in_sample: float  # its value on `kept` (`any` after the opening)
    any_in_sample: float  # `any` at the opening, on `kept`
    left_out: float  # its value on the samples not kept
    any_left_out: float
    greedy_left_out: float | None  # the domain's greedy opening, on the samples not kept


class SizeScore(BaseModel):
    """One subset size of an instance: every subset's score, and their means."""

    size: int
    subsets: list[SubsetScore]
    in_sample_gain: float  # mean over subsets of in_sample - any_in_sample
    left_out_gain: float  # mean of left_out - any_left_out: the clean gain on unseen samples
    selection: float  # in_sample_gain - left_out_gain
    versus_greedy: float | None  # mean of left_out - greedy_left_out


class InstanceRecord(BaseModel):
    """`<results>/instances/<i>.json`: one instance, everything its rows are computed from."""

    index: int
    key: str
    num_llm_seeds: list[int] | int
    first_player: int
    instructions: list[str]
    deal_weights: list[float]
    #: `opening_values`: [deal][instruction][opening sample], the first mover's value.
    values: list[list[list[float]]]
    #: [deal]: the greedy opening's instruction id (None: the domain has no greedy hook).
    greedy: list[int] | None
    #: CFR on all S0 opening samples: its opening policy and in-sample gain over `any`.
    full_opening: list[list[float]]
    full_gain: float
    #: `--draws`: disjoint partitions per size (0: every subset).
    draws: int
    sizes: list[SizeScore]
    new_calls: int
    wall_s: float
    llm: str
    commit: str
    measured_at: str
    command: str
    machine: str


def record_key(spec: DomainSpec, instance: Instance, model: str, sizes: Sequence[int],
               draws: int, seed: int, solver: str, iterations: int) -> str:
    """What decides a saved instance (a rerun keeps it only under the same key)."""
    key = stable_int(spec.model_dump(mode="json"), spec.hooks.fingerprint(),
                     instance.model_dump(mode="json"), model, list(sizes), draws, seed, solver,
                     iterations, SCHEMA, bits=63)
    return f"{key:016x}"


def greedy_openings(game: DialogueGame) -> list[int] | None:
    """Per deal, the first mover's greedy opening (None where the domain names none)."""
    names = game.instructions()
    out = []
    for deal in game.deals:
        chosen = greedy_instruction(game.spec, deal.private_info[game.first_player])
        if chosen is None:
            return None
        out.append(names.index(chosen))
    return out


def score_subset(full: DialogueGame, kept: list[int], values: list[list[list[float]]],
                 weights: list[float], greedy: list[int] | None, solver: str,
                 iterations: int) -> SubsetScore:
    """CFR on the opening samples `kept` of `full` (no model call), scored in and out."""
    game = OpeningSubset(full, kept)
    opening = opening_policy(game, solve_cfr(game, solver=solver, iterations=iterations).policy)
    rest = [i for i in range(full.spec.samples_at(0)) if i not in kept]
    width = len(full.instructions())
    on_any = pure([full.any_action()] * len(weights), width)
    return SubsetScore(
        kept=kept, opening=opening,
        in_sample=value(values, weights, opening, kept),
        any_in_sample=value(values, weights, on_any, kept),
        left_out=value(values, weights, opening, rest),
        any_left_out=value(values, weights, on_any, rest),
        greedy_left_out=None if greedy is None else value(values, weights,
                                                          pure(greedy, width), rest))


def size_score(size: int, scores: list[SubsetScore]) -> SizeScore:
    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    ins = mean([s.in_sample - s.any_in_sample for s in scores])
    out = mean([s.left_out - s.any_left_out for s in scores])
    greedy = [s.greedy_left_out for s in scores]
    return SizeScore(
        size=size, subsets=scores, in_sample_gain=ins, left_out_gain=out, selection=ins - out,
        versus_greedy=None if None in greedy else mean(
            [s.left_out - g for s, g in zip(scores, greedy, strict=True)]))  # type: ignore[operator]


class ExpansionFailed(RuntimeError):
    """An instance's tree could not be expanded (a failed model call): not saved, so a rerun
    tries it again; what the cache holds is kept."""


def measure_instance(spec: DomainSpec, instance: Instance, llm: LLM, sizes: Sequence[int],
                     draws: int, seed: int = 0, solver: str = DEFAULT_SOLVER,
                     iterations: int = DEFAULT_ITERATIONS, progress: bool = False,
                     command: str = COMMAND) -> InstanceRecord:
    """Expand one instance's S0 tree, solve it whole and on every subset, score each."""
    t0 = time.perf_counter()
    before = llm.usage
    full = make_game(spec, instance, llm, seed=seed)
    report = expand_sync(full, progress=progress)
    if report.failed:
        raise ExpansionFailed(f"instance {instance.index}: {report.reason}")
    values = opening_values(full)
    weights = [w for w, _ in deal_roots(full)]
    greedy = greedy_openings(full)
    samples = spec.samples_at(0)
    whole = opening_policy(full, solve_cfr(full, solver=solver, iterations=iterations).policy)
    on_any = pure([full.any_action()] * len(weights), len(full.instructions()))
    everything = range(samples)
    scores = [size_score(k, [score_subset(full, kept, values, weights, greedy, solver,
                                          iterations)
                             for kept in subsets(samples, k, draws,
                                                 stable_int(seed, instance.seed))])
              for k in sizes]
    here = benchdoc.machine()
    return InstanceRecord(
        index=instance.index,
        key=record_key(spec, instance, llm.model, sizes, draws, seed, solver, iterations),
        num_llm_seeds=spec.num_llm_seeds, first_player=full.first_player,
        instructions=full.instructions(), deal_weights=weights, values=values, greedy=greedy,
        full_opening=whole,
        full_gain=value(values, weights, whole, everything)
        - value(values, weights, on_any, everything),
        draws=draws, sizes=scores, new_calls=llm.usage.since(before).new_calls,
        wall_s=round(time.perf_counter() - t0, 1), llm=llm.model,
        commit=benchdoc.commit(["gtsteer", "lab"]), measured_at=here.date, command=command,
        machine=here.described)


# ---- the study -----------------------------------------------------------------------------


def per_depth(spec: DomainSpec, samples: Sequence[int]) -> list[int]:
    """`--samples`: S0 alone keeps the config's later counts ([8] on `num_llm_seeds: 2` is
    [8, 2]); a list is taken as given."""
    if len(samples) > 1:
        return list(samples)
    later = spec.num_llm_seeds if isinstance(spec.num_llm_seeds, int) else (
        spec.num_llm_seeds[1:] or [spec.num_llm_seeds[0]])
    return [samples[0], *([later] if isinstance(later, int) else later)]


def study_spec(config: Path, samples: Sequence[int], deals: int | None) -> DomainSpec:
    """The config with `num_llm_seeds` per depth (and `--deals`), validated and bound."""
    spec = load_spec(config)
    if deals is not None:
        spec = spec.with_deals(deals)
    data = {**spec.model_dump(), "num_llm_seeds": per_depth(spec, samples)}
    return bind(parse_spec(data, f"{config} --samples"), str(config))


STUDY_FILE = "study.json"


class StudyRun(BaseModel):
    """`<results>/study.json`: which saved instances the last run's section is drawn from
    (by index, with their keys), so `--render-only` draws the same section."""

    config: str
    games: int
    failed: int
    keys: dict[int, str]


def instance_path(results: Path, index: int) -> Path:
    return results / "instances" / f"{index}.json"


def read_record(path: Path) -> InstanceRecord | None:
    try:
        return InstanceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # none yet, another schema or a torn write: measured again


def saved_study(results: Path) -> tuple[StudyRun, list[InstanceRecord]]:
    """The last run's settings and the saved instances it kept or measured (those whose key
    still matches); a `FileNotFoundError` naming the file where no run saved one."""
    path = results / STUDY_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no study saved there (run it without --render-only)")
    run = StudyRun.model_validate_json(path.read_text(encoding="utf-8"))
    records = [r for i, key in sorted(run.keys.items())
               if (r := read_record(instance_path(results, i))) is not None and r.key == key]
    return run, records


@dataclass(frozen=True)
class InstanceUnit:
    """One instance's work, as the serial loop or a Ray task receives it (`--ray`)."""

    spec: DomainSpec
    instance: Instance
    sizes: tuple[int, ...]
    draws: int
    seed: int
    iterations: int
    progress: bool
    command: str


def measure_unit(unit: InstanceUnit, model: LLM) -> InstanceRecord | str:
    """`measure_instance` for the executor: a tree that could not be expanded is its reason
    (the run goes on with the other instances), never an exception that stops it."""
    try:
        return measure_instance(unit.spec, unit.instance, model, unit.sizes, unit.draws,
                                unit.seed, iterations=unit.iterations, progress=unit.progress,
                                command=unit.command)
    except ExpansionFailed as exc:
        return str(exc)


def run_study(config: Path, llm: str | LLM, games: int, samples: Sequence[int],
              sizes: Sequence[int], draws: int, results: Path, *, deals: int | None = None,
              seed: int = 0, iterations: int = DEFAULT_ITERATIONS, progress: bool = False,
              ray: RayOptions | None = None, command: str = COMMAND,
              report: Callable[[str], None] = print) -> tuple[list[InstanceRecord], int]:
    """Measure instances 0..games-1 (serially, or one Ray task each), keeping those saved
    under the same key; each is saved as it finishes. Returns the records (in order) and how
    many instances failed (not saved: a rerun tries them again)."""
    spec = study_spec(config, samples, deals)
    for k in sizes:
        subsets(spec.samples_at(0), k, 1, 0)  # a bad size fails before any model call
    client, _, _ = RunContext.of(llm=llm).roles(spec)
    done: dict[int, InstanceRecord] = {}
    todo = []
    for instance in generate_instances(spec, games, seed):
        kept = read_record(instance_path(results, instance.index))
        if kept is not None and kept.key == record_key(spec, instance, client.model, sizes,
                                                       draws, seed, DEFAULT_SOLVER, iterations):
            report(f"instance {instance.index}: saved, kept")
            done[instance.index] = kept
        else:
            todo.append(InstanceUnit(spec, instance, tuple(sizes), draws, seed, iterations,
                                     progress and ray is None, command))
    failed = 0

    def finished(i: int, outcome: InstanceRecord | str) -> None:
        nonlocal failed
        if isinstance(outcome, str):
            report(f"{outcome}; not saved (a rerun tries it again)")
            failed += 1
        else:
            write_json(instance_path(results, outcome.index), outcome)
            report(f"instance {outcome.index}: {outcome.new_calls} new calls,"
                   f" {outcome.wall_s:.0f} s")
            done[outcome.index] = outcome
        save_run(results, config, games, failed, done)  # a stopped run keeps its section

    Executor(ray, progress).run(measure_unit, todo, client, on_result=finished,
                                label="instances")
    save_run(results, config, games, failed, done)
    return [done[i] for i in sorted(done)], failed


def save_run(results: Path, config: Path, games: int, failed: int,
             records: dict[int, InstanceRecord]) -> None:
    write_json(results / STUDY_FILE, StudyRun(config=repo_relative(config), games=games,
                                              failed=failed,
                                              keys={i: r.key for i, r in sorted(records.items())}))


# ---- rows and the doc section ----------------------------------------------------------------


class SizeRow(BaseModel):
    size: int
    n: int
    in_sample_gain: MeanCI
    left_out_gain: MeanCI
    selection: MeanCI
    versus_greedy: MeanCI | None


def rows(records: list[InstanceRecord]) -> list[SizeRow]:
    """Per subset size, Student-t intervals over the instances that measured it."""
    sizes = sorted({s.size for r in records for s in r.sizes})
    out = []
    for k in sizes:
        scores = [s for r in records for s in r.sizes if s.size == k]
        greedy = [s.versus_greedy for s in scores]
        out.append(SizeRow(
            size=k, n=len(scores), in_sample_gain=mean_ci([s.in_sample_gain for s in scores]),
            left_out_gain=mean_ci([s.left_out_gain for s in scores]),
            selection=mean_ci([s.selection for s in scores]),
            versus_greedy=None if None in greedy else mean_ci(greedy)))  # type: ignore[arg-type]
    return out


def paired(records: list[InstanceRecord], small: int, large: int
           ) -> dict[str, tuple[MeanCI, list[float]]]:
    """Per instance, size `large` minus size `small`: the left-out gain and the selection
    (their interval and the per-instance differences)."""
    both = [(next(s for s in r.sizes if s.size == small), next(s for s in r.sizes
                                                               if s.size == large))
            for r in records if {small, large} <= {s.size for s in r.sizes}]
    if len(both) < 2:
        return {}
    diffs = {"left-out gain": [b.left_out_gain - a.left_out_gain for a, b in both],
             "selection": [b.selection - a.selection for a, b in both]}
    return {label: (mean_ci(values), values) for label, values in diffs.items()}


def render(run: StudyRun, records: list[InstanceRecord], render_command: str) -> str:
    """The doc section, from the saved instances alone (so `--render-only` redraws it)."""
    lines = [f"## Within-tree samples study: selection at the opening by S (`{run.config}`)", ""]
    if not records:
        return "\n".join([*lines, "No instance measured yet. Command:",
                          f"`{render_command}`"])
    first = records[0]
    s0 = first.num_llm_seeds if isinstance(first.num_llm_seeds, int) else first.num_llm_seeds[0]
    measured = sorted({(r.command, r.machine) for r in records})
    lines += [f"Rendered by `{render_command}` from the saved instances; measured by "
              + "; ".join(f"`{c}` on {m}" for c, m in measured) + ".", ""]
    lines += [
        (f"One tree per instance with `num_llm_seeds: {first.num_llm_seeds}` ({s0} opening"
         f" samples). For each S < {s0}, CFR+ ({DEFAULT_ITERATIONS} iterations) is solved"
         " again on an S-subset of the opening samples (the opening chance node restricted"
         " to them, probabilities renormalised: exact) and the first mover's opening policy"
         f" is scored on those S samples (*in-sample*) and on the {s0} - S left out"
         " (*left-out*), every later decision on `any`; each a gain over `any` at the"
         " opening on the same samples. *selection* = in-sample minus left-out gain;"
         " *vs greedy* = the left-out value minus the domain's greedy opening's on the same"
         " left-out samples. An instance's value is the mean over its subsets ("
         + ("every S-subset of its samples" if first.draws == 0 else
            f"{first.draws} seeded partition(s) of its samples into disjoint S-subsets")
         + "); intervals are 95% Student-t over instances. The"
         f" smaller S cost no model call; S = {s0} is the full solve, in-sample only."),
        "",
        "| S | instances | in-sample gain | left-out gain | selection | left-out vs greedy |"
        " subsets per instance |",
        "|---:|---:|---|---|---|---|---:|",
    ]
    per = {s.size: len(s.subsets) for s in first.sizes}
    for row in rows(records):
        lines.append(f"| {row.size} | {row.n} | {ci(row.in_sample_gain)} |"
                     f" {ci(row.left_out_gain)} | {ci(row.selection)} |"
                     f" {ci(row.versus_greedy)} | {per.get(row.size, 0)} |")
    lines.append(f"| {s0} | {len(records)} | {ci(mean_ci([r.full_gain for r in records]))} |"
                 " — | — | — | 1 (all) |")
    shown = f"{len(records)} of {run.games}" + (
        f" ({run.failed} failed: not saved, a rerun measures them)" if run.failed else "")
    calls = sum(r.new_calls for r in records)
    lines += ["", f"Instances: {shown}; new model calls when measured {calls:,}; model"
              f" `{', '.join(sorted({r.llm for r in records}))}`; commit"
              f" {', '.join(sorted({r.commit for r in records}))}; measured"
              f" {min(r.measured_at for r in records)} to {max(r.measured_at for r in records)}."]
    sizes = sorted({s.size for r in records for s in r.sizes})
    if len(sizes) > 1:
        for label, (diff, values) in paired(records, sizes[0], sizes[-1]).items():
            lines += ["", f"Paired per instance, S = {sizes[-1]} minus S = {sizes[0]}, {label}:"
                      f" {ci(diff)} (n = {diff.n}; minimum detectable effect at this n, 80%"
                      f" power: {mde_text(values)})."]
    return "\n".join(lines)


def parse_counts(text: str, flag: str, parser: Any) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        parser.error(f"{flag}: comma-separated integers, got {text!r}")
    if not counts or min(counts) < 1:
        parser.error(f"{flag}: counts >= 1, got {text!r}")
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--games", type=int, default=20, help="instances (default 20)")
    parser.add_argument("--samples", default="8",
                        help="opening samples S0 (later messages keep the config's count), or"
                             " a per-depth list such as 8,2 (default 8)")
    parser.add_argument("--subsets", default="2,4", help="the smaller S, each < S0")
    parser.add_argument("--draws", type=int, default=0,
                        help="seeded disjoint partitions per instance and S (default 0: every"
                             f" subset, where there are at most {MAX_SUBSETS})")
    parser.add_argument("--deals", type=int, help="solve each instance dealt (`gtsteer solve"
                                                  " --deals`)")
    parser.add_argument("--llm", default="local")
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "samples_within")
    parser.add_argument("--doc", type=Path, default=benchdoc.DOC)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--render-only", action="store_true",
                        help="no model call: write the section from the saved instances")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the worst-case requests of the trees and stop")
    benchdoc.add_ray_arguments(parser)
    args = parser.parse_args(argv)
    ray = benchdoc.ray_options(parser, args)
    samples = parse_counts(args.samples, "--samples", parser)
    sizes = parse_counts(args.subsets, "--subsets", parser)
    if args.games < 2 or args.draws < 0:
        parser.error("--games: >= 2 (for an interval); --draws: >= 0")
    config = args.config.resolve()
    spec = study_spec(config, samples, args.deals)  # a broken config fails before any call
    for k in sizes:
        try:
            subsets(spec.samples_at(0), k, 1, 0)
        except ValueError as exc:
            parser.error(f"--subsets: {exc}")
        if args.draws == 0 and math.comb(spec.samples_at(0), k) > MAX_SUBSETS:
            parser.error(f"--subsets {k}: {math.comb(spec.samples_at(0), k):,} subsets of"
                         f" {spec.samples_at(0)} samples, over {MAX_SUBSETS} CFR solves per"
                         " instance; give --draws N (N disjoint partitions)")
    shown = repo_relative(config)
    given = sys.argv[1:] if argv is None else argv
    command = COMMAND + "".join(f" {a}" for a in given)
    render_command = (f"{COMMAND} {shown} --results {repo_relative(args.results.resolve())}"
                      " --render-only")
    if args.dry_run:
        size = tree_size(spec)
        print(f"num_llm_seeds {spec.num_llm_seeds}: at most {short(size.llm_calls)} requests"
              f" per instance, {short(size.llm_calls * args.games)} for {args.games} (worst"
              " case: no dialogue ends early; cached answers cost nothing)")
        return
    if not args.render_only:
        _, failed = run_study(config, args.llm, args.games, samples, sizes, args.draws,
                              args.results, deals=args.deals, progress=not args.quiet,
                              ray=ray, command=command)
        if failed:
            print(f"{failed} instance(s) failed; rerun the command to measure them")
    name = section(spec.name)
    text = render(*saved_study(args.results), render_command)
    start, end = benchdoc.markers(name)
    benchdoc.write_section(args.doc, start, end, benchdoc.wrap(start, end, text))
    print(text)


if __name__ == "__main__":
    main()
