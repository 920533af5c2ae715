"""PSRO over instructions (arXiv 2402.01704, Section 4): solve the meta-game among the
instructions found so far, ask an LLM for instructions that do better against its solution,
add the best, repeat. Library code: it returns report data and writes no file.

Every player (or each of `config.oracle_players`) gets its own population and its own oracle
each iteration (simultaneous PSRO); all oracles answer the same meta-strategy, the one of
`config.meta_solver`; every solution concept is computed and reported each iteration (`nash`
only when it drives or `config.report_nash` asks for it). A
proposed instruction grows the game's action set (old action ids unchanged), so only branches
that involve it reach the model. The run has converged when no oracle adds anything and the
driver's meta-strategy is an equilibrium of the restricted game up to `gap_tolerance` (for
the bargaining driver `nbs`, which is no equilibrium: when no oracle adds anything).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from gtsteer.binding import ANY, DialogueGame, ExpansionError, grow_game, make_game
from gtsteer.llm import LLM, LLMCalls, UsageReport
from gtsteer.solvers.meta import META_SOLVERS, MetaInputs, MetaSolution, deviation_payoffs
from gtsteer.solvers.psro.candidates import canonical
from gtsteer.solvers.psro.metagame import (
    GameMap,
    MetaGame,
    build_metagame,
    sample_dialogues,
    serial_map,
)
from gtsteer.solvers.psro.oracles import (
    HeldOutCheck,
    OracleInput,
    OracleResult,
    Scores,
    run_oracle,
)
from gtsteer.solvers.psro.prompts import SampledDialogue
from gtsteer.solvers.psro.report import (
    CONVERGED,
    NO_CANDIDATE,
    IterationReport,
    LLMWork,
    MetaGameReport,
    PSROConfig,
    PSROResult,
    SolutionReport,
)

#: Dialogues shown to the trajectory-aware proposer (one per current instruction, at most).
MAX_DIALOGUES = 6


def solve_meta(stack: np.ndarray, disagreement: Sequence[float],
               tie_break: str = "entropy", *, wanted: str | None = None,
               nash: bool = False) -> dict[str, MetaSolution]:
    """Every registered solution concept defined for this many players, in `META_SOLVERS`
    order; an `on_demand` one (`nash`: a MILP exponential in the worst case) only when it is
    `wanted` (it drives) or `nash` asks for every one (`--report-nash`)."""
    inputs = MetaInputs(disagreement, tie_break)
    return {name: m.solve(stack, inputs) for name, m in META_SOLVERS.items()
            if m.players in (None, stack.shape[0]) and (nash or name == wanted
                                                        or not m.on_demand)}


class _Run:
    """Mutable PSRO state: the (growing) games, the populations, the LLM meters."""

    def __init__(self, games: Sequence[DialogueGame], proposer: LLM, config: PSROConfig,
                 progress: bool, map_games: GameMap = serial_map):
        if not games:
            raise ValueError("games: PSRO needs at least one game")
        spec = games[0].spec
        if len(spec.action_keys) != 1:
            raise ValueError(f"PSRO grows one instruction key; {spec.name} has several "
                             f"{spec.action_keys} (one instruction per player needs one key)")
        key = config.key or spec.action_keys[0]
        if key not in spec.actions:
            raise ValueError(f"key: {key!r} is not an action key of {spec.name}")
        self.games = list(games)
        self.key = key
        self.config = config
        self.proposer = proposer
        self.progress = progress
        self.map_games = map_games
        n = spec.num_players
        if META_SOLVERS[config.meta_solver].players not in (None, n):
            raise ValueError(f"meta_solver: {config.meta_solver!r} is for"
                             f" {META_SOLVERS[config.meta_solver].players} players;"
                             f" {spec.name} has {n}")
        if config.report_nash and n != 2:
            raise ValueError(f"report_nash: 'nash' is exact for 2 players; {spec.name} has {n}")
        bad = [q for q in config.oracle_players or [] if not 0 <= q < n]
        if bad:
            raise ValueError(f"oracle_players: {bad} are not players of {spec.name} "
                             f"(0..{n - 1})")
        self.oracle_players = sorted(set(config.oracle_players or range(n)))
        self.populations = [list(spec.actions[key]) for _ in range(n)]
        self.categories: list[dict[str, str]] = [{v: key for v in spec.actions[key]}
                                                 for _ in range(n)]
        self.failed: set[int] = set()
        span = spec.payoff.max - spec.payoff.min
        self.tolerance = 1e-9 * span
        #: The same positions with fresh LLM samples (`heldout`): seeds after the solved ones.
        self.fresh: list[DialogueGame] = [
            make_game(g.spec, g.instance, g.llm, config=str(g.get_parameters().get("config", "")),
                      seed=int(g.get_parameters().get("seed", 0)),
                      sample_offset=g.sample_offset + g.spec.max_llm_seeds)
            for g in self.games
        ] if config.heldout else []
        self.models = list({id(m): m for m in [*(g.llm for g in self.games), proposer]}.values())

    # ---- game growth -----------------------------------------------------------------------

    def resolve(self, label: str) -> str:
        """An existing action with the same canonical form, else `label` itself."""
        actions = self.games[0].instructions()
        by_key = {canonical(a): a for a in actions}
        return label if label in actions else by_key.get(canonical(label), label)

    def ensure(self, labels: Sequence[str]) -> list[str]:
        resolved = [self.resolve(x) for x in labels]
        for label in resolved:
            if label not in self.games[0].instructions():
                self.games = [grow_game(g, self.key, label) for g in self.games]
            if self.fresh and label not in self.fresh[0].instructions():
                self.fresh = [grow_game(g, self.key, label) for g in self.fresh]
        return resolved

    def metagame(self, populations: Sequence[Sequence[str]], *, fresh: bool = False
                 ) -> MetaGame:
        """The meta-game of `populations` on the solved games (or the fresh-sample ones, whose
        failures are not carried over: they are only a check)."""
        mg, _ = build_metagame(self.fresh if fresh else self.games, populations,
                               progress=self.progress, skip=sorted(self.failed),
                               map_games=self.map_games)
        if not fresh:
            self.failed |= set(mg.failures)
        return mg

    # ---- oracle support ----------------------------------------------------------------------

    def support(self, player: int, joint: np.ndarray) -> tuple[list[np.ndarray], float]:
        """Per opponent, the indices of its instructions played with probability above
        `support_tolerance` (the focal player: all of its own), and the joint mass outside.

        Opponent instructions below the tolerance cannot move a score by more than their mass
        times the payoff span, so their branches are not expanded (a candidate then costs
        calls only for the profiles the meta-strategy plays)."""
        others = joint.sum(axis=player, keepdims=True)
        keep: list[np.ndarray] = []
        for p in range(joint.ndim):
            if p == player:
                keep.append(np.arange(joint.shape[p]))
                continue
            marginal = others.sum(axis=tuple(a for a in range(joint.ndim) if a != p))
            kept = np.flatnonzero(marginal > self.config.support_tolerance)
            keep.append(kept if kept.size else np.arange(marginal.size))
        opponents = [np.arange(1) if p == player else k for p, k in enumerate(keep)]
        ignored = max(0.0, float(1.0 - others[np.ix_(*opponents)].sum()))
        return keep, ignored

    def scores(self, player: int, joint: np.ndarray, labels: Sequence[str], *,
               fresh: bool = False) -> Scores:
        """Candidates' expected payoffs for `player` against the others' part of `joint`
        (their joint marginal on its support, renormalised), averaged over instances, and the
        baselines from the same meta-game: the current instructions' best score and the
        current value u_i(joint), both on the same support and instances."""
        keep, _ = self.support(player, joint)
        resolved = self.ensure(labels)
        population = self.populations[player]
        mine = list(dict.fromkeys([*population, *resolved]))
        pops = [mine if p == player else [pop[i] for i in keep[p]]
                for p, pop in enumerate(self.populations)]
        mg = self.metagame(pops, fresh=fresh)
        axes = tuple(a for a in range(joint.ndim) if a != player)
        played = joint[np.ix_(*keep)]  # the joint on the kept opponent profiles
        others = played.sum(axis=player, keepdims=True)
        weights = others / others.sum()
        values = np.sum(mg.mean[player] * weights, axis=axes)
        by_label = dict(zip(mine, values, strict=True))
        n = len(population)
        current_block = np.take(mg.mean[player], np.arange(n), axis=player)
        current = float(np.sum(current_block * played) / played.sum())
        return Scores(candidates={x: float(by_label[r]) for x, r in zip(labels, resolved,
                                                                         strict=True)},
                      best_current=float(values[:n].max()), current_value=current,
                      instances=list(mg.instances),
                      current={x: float(v) for x, v in zip(population, values[:n],
                                                           strict=True)})

    def dialogues(self, player: int, sol: MetaSolution) -> list[SampledDialogue]:
        usable = [g for g in self.games if g.instance.index not in self.failed]
        if not usable:
            return []
        opponents = [pop[int(np.argmax(m))] for pop, m in zip(self.populations, sol.marginals,
                                                                strict=True)]
        shown = sample_dialogues(usable[0], self.populations, player, opponents)[:MAX_DIALOGUES]
        return [SampledDialogue(instruction=i, payoff=v, transcript=t) for i, v, t in shown]

    def usage(self) -> list[UsageReport]:
        return [m.usage for m in self.models]

    def work(self, before: list[UsageReport]) -> LLMWork:
        calls = [a.since(b) for a, b in zip(self.usage(), before, strict=True)]
        out = LLMWork(**sum(calls, LLMCalls()).model_dump())
        for model, c in zip(self.models, calls, strict=True):
            if model is self.proposer and all(g.llm is not model for g in self.games):
                out.proposer_requests += c.requests
                out.proposer_new_calls += c.new_calls
        return out


def run_psro(
    games: Sequence[DialogueGame],
    proposer: LLM,
    config: PSROConfig | None = None,
    *,
    progress: bool = False,
    on_iteration: Callable[[IterationReport], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    map_games: GameMap = serial_map,
) -> PSROResult:
    """Run PSRO on `games` (one per instance, same spec) and return every iteration's report.

    Iteration t solves the meta-game of the current populations and, while t < iterations,
    asks each player's oracle for a new instruction; the last report has no oracle step.
    `on_phase` hears a short description of each step (for progress displays). Every
    meta-game build (the iteration's, each oracle's candidate scores) maps its per-instance
    expansions with `map_games` (a driver may run them elsewhere, e.g. as Ray tasks)."""
    config = config or PSROConfig()
    phase = on_phase or (lambda _text: None)
    run = _Run(games, proposer, config, progress, map_games)
    reports: list[IterationReport] = []
    converged = False
    stop_reason: str | None = None
    for t in range(config.iterations + 1):
        start, before = time.perf_counter(), run.usage()
        sizes = "x".join(str(len(p)) for p in run.populations)
        phase(f"iteration {t}: meta-game {sizes}")
        mg = run.metagame(run.populations)
        stack = mg.mean
        all_any: tuple[slice | int, ...] = (
            slice(None), *(pop.index(ANY) for pop in run.populations)
        )
        solutions = solve_meta(stack, stack[all_any].tolist(), config.cce_tie_break,
                               wanted=config.meta_solver, nash=config.report_nash)
        driver = solutions[config.meta_solver]
        report = IterationReport(
            iteration=t,
            populations=[list(p) for p in run.populations],
            game_actions=list(run.games[0].instructions()),
            metagame=MetaGameReport.of(mg),
            solutions={c: SolutionReport.of(s, stack, mg.labels) for c, s in solutions.items()},
            driver=config.meta_solver,
        )
        report.gap = report.solutions[config.meta_solver].gap
        report.gap_limit = config.gap_tolerance * float(stack.max() - stack.min())
        report.stop_rule = META_SOLVERS[config.meta_solver].stop_rule
        if t < config.iterations:
            results = []
            for p in run.oracle_players:
                phase(f"iteration {t}: {config.operator} oracle, player {p}")
                results.append(_oracle(run, p, t, stack, driver))
            report.oracles = results
            for r in results:
                if r.added is not None:
                    label = run.ensure([r.added])[0]
                    if label != r.added:  # the proposal was an existing action in other words
                        r.proposed, r.added = r.added, label
                    run.populations[r.player].append(label)
                    run.categories[r.player][label] = r.added_category or run.key
            by_player = {r.player: r for r in results}
            report.added = [by_player[p].added if p in by_player else None
                            for p in range(len(run.populations))]
            report.rejected = [by_player[p].rejected if p in by_player else None
                               for p in range(len(run.populations))]
            report.stop = _stop(report, results)
            report.converged = converged = report.stop == CONVERGED
        report.game_actions = list(run.games[0].instructions())
        report.llm = run.work(before)
        report.wall_s = round(time.perf_counter() - start, 3)
        reports.append(report)
        if on_iteration is not None:
            on_iteration(report)
        if report.stop is not None and config.stop_when_converged:
            stop_reason = report.stop
            break
    return PSROResult(config=config, key=run.key, iterations=reports, converged=converged,
                      final_populations=[list(p) for p in run.populations],
                      stop_reason=stop_reason)


def _stop(report: IterationReport, results: Sequence[OracleResult]) -> str | None:
    """Whether the run stops here, and why. It stops when no oracle found an improvement
    (added, or rejected by the held-out gate: the in-sample oracle did improve, so the
    restricted game is not solved) and, for an equilibrium driver, its gap is within the
    limit (`report.stop_rule`). That is convergence only if every oracle scored candidates:
    an oracle whose proposer produced none searched nothing (`NO_CANDIDATE`)."""
    found = any(r.added is not None or r.rejected is not None for r in results)
    if found or (report.stop_rule == "gap" and report.gap > report.gap_limit):
        return None
    return NO_CANDIDATE if any(r.no_candidate for r in results) else CONVERGED


def _oracle(run: _Run, player: int, t: int, stack: np.ndarray, sol: MetaSolution
            ) -> OracleResult:
    # what the proposer is shown: the exact deviation payoffs on the whole meta-game
    dev = deviation_payoffs(stack, sol.joint, player)
    scores = {label: float(v) for label, v in zip(run.populations[player], dev, strict=True)}
    _, ignored = run.support(player, sol.joint)
    inp = OracleInput(
        spec=run.games[0].spec, key=run.key, player=player,
        population=list(run.populations[player]), scores=scores,
        current_value=float(sol.payoffs(stack)[player]),
        score=lambda labels: run.scores(player, sol.joint, labels),
        proposer=run.proposer, k=run.config.candidates, iteration=t, seed=run.config.seed,
        tolerance=run.tolerance, categories=dict(run.categories[player]),
        dialogues=run.dialogues(player, sol) if run.config.operator == "trajectory" else [],
    )
    result = run_oracle(run.config.operator, inp)
    result.ignored_mass = ignored
    if result.added is not None and run.config.heldout:
        result.heldout = _heldout(run, player, sol.joint, result)
        if run.config.heldout_gate and not result.heldout.holds:
            check = result.heldout
            result.reason = (f"{result.added!r} did not beat its baseline on fresh samples ("
                             + (f"{check.candidate:+.4f} vs {check.baseline:+.4f})"
                                if check.error is None else f"not scored: {check.error})"))
            result.rejected = result.added
            result.added = result.added_category = None
    return result


def _heldout(run: _Run, player: int, joint: np.ndarray, result: OracleResult) -> HeldOutCheck:
    """The adopted instruction against its in-sample baseline, both re-scored on fresh
    samples. The baseline is chosen on the solved samples (see `HeldOutCheck`): for `better`
    the meta-strategy's value, else the current instruction that scored best there."""
    assert result.added is not None
    in_sample = next(c.score for c in reversed(result.candidates)
                     if c.instruction == result.added)
    by_value = result.operator == "better"
    label = None if by_value else result.best_current_instruction
    check = HeldOutCheck(candidate=None, baseline=None, holds=False,
                         candidate_in_sample=in_sample,
                         baseline_in_sample=result.current_value if by_value
                         else result.best_current,
                         baseline_instruction=label)
    try:
        fresh = run.scores(player, joint, [result.added], fresh=True)
    except ExpansionError as exc:  # no instance expanded on fresh samples: no evidence either way
        return check.model_copy(update={"error": str(exc)})
    baseline = fresh.current_value if label is None else fresh.current[label]
    candidate = fresh.candidates[result.added]
    return check.model_copy(update={
        "candidate": candidate, "baseline": baseline,
        "holds": candidate > baseline + run.tolerance, "instances": fresh.instances})
