"""PSRO over instructions (arXiv 2402.01704, Section 4): solve the meta-game among the
instructions found so far, ask an LLM for instructions that do better against its solution,
add the best, repeat. Library code: it returns report data and writes no file.

Every player (or each of `config.oracle_players`) gets its own population and its own oracle
each iteration (simultaneous PSRO); all oracles answer the same meta-strategy, the one of
`config.meta_solver`; every solution concept is computed and reported each iteration. A
proposed instruction grows the game's action set (old action ids unchanged), so only branches
that involve it reach the model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from gtsteer.binding import ANY, DialogueGame, grow_game
from gtsteer.llm import LLM, LLMCalls, UsageReport
from gtsteer.solvers.meta import (
    MetaSolution,
    deviation_payoffs,
    max_welfare_cce,
    nash_bargaining,
    replicator_dynamics,
)
from gtsteer.solvers.psro.candidates import canonical
from gtsteer.solvers.psro.metagame import MetaGame, build_metagame, sample_dialogues
from gtsteer.solvers.psro.oracles import OracleInput, OracleResult, run_oracle
from gtsteer.solvers.psro.prompts import SampledDialogue
from gtsteer.solvers.psro.report import (
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
               tie_break: str = "entropy") -> dict[str, MetaSolution]:
    """Every solution concept on one meta-game."""
    return {
        "rd": replicator_dynamics(stack),
        "cce": max_welfare_cce(stack, tie_break=tie_break),  # type: ignore[arg-type]
        "nbs": nash_bargaining(stack, disagreement),
    }


class _Run:
    """Mutable PSRO state: the (growing) games, the populations, the LLM meters."""

    def __init__(self, games: Sequence[DialogueGame], proposer: LLM, config: PSROConfig,
                 progress: bool):
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
        n = spec.num_players
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
        return resolved

    def metagame(self, populations: Sequence[Sequence[str]]) -> MetaGame:
        mg, _ = build_metagame(self.games, populations, progress=self.progress,
                               skip=sorted(self.failed))
        self.failed |= set(mg.failures)
        return mg

    # ---- oracle support ----------------------------------------------------------------------

    def scorer(self, player: int, joint: np.ndarray
               ) -> tuple[Callable[[Sequence[str]], dict[str, float]], float]:
        """Expected payoff of candidate instructions for `player` against the others' part of
        `joint` (their joint marginal), averaged over instances; exact on the support. Also
        returns the meta-strategy mass left out of that support.

        Opponent instructions with probability at most `support_tolerance` cannot move a score
        by more than that mass times the payoff span, so their branches are not expanded (a
        candidate then costs calls only for the profiles the meta-strategy plays)."""
        others = joint.sum(axis=player, keepdims=True)
        keep: list[np.ndarray] = []
        for p in range(joint.ndim):
            if p == player:
                keep.append(np.arange(1))
                continue
            marginal = others.sum(axis=tuple(a for a in range(joint.ndim) if a != p))
            kept = np.flatnonzero(marginal > self.config.support_tolerance)
            keep.append(kept if kept.size else np.arange(marginal.size))
        supported = others[np.ix_(*keep)]
        ignored = max(0.0, float(1.0 - supported.sum()))
        weights = supported / supported.sum()
        axes = tuple(a for a in range(joint.ndim) if a != player)

        def score(labels: Sequence[str]) -> dict[str, float]:
            resolved = self.ensure(labels)
            pops = [resolved if p == player else [pop[i] for i in keep[p]]
                    for p, pop in enumerate(self.populations)]
            mg = self.metagame(pops)
            values = np.sum(mg.mean[player] * weights, axis=axes)
            return {x: float(v) for x, v in zip(labels, values, strict=True)}

        return score, ignored

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
) -> PSROResult:
    """Run PSRO on `games` (one per instance, same spec) and return every iteration's report.

    Iteration t solves the meta-game of the current populations and, while t < iterations,
    asks each player's oracle for a new instruction; the last report has no oracle step.
    `on_phase` hears a short description of each step (for progress displays)."""
    config = config or PSROConfig()
    phase = on_phase or (lambda _text: None)
    run = _Run(games, proposer, config, progress)
    reports: list[IterationReport] = []
    converged = False
    for t in range(config.iterations + 1):
        start, before = time.perf_counter(), run.usage()
        sizes = "x".join(str(len(p)) for p in run.populations)
        phase(f"iteration {t}: meta-game {sizes}")
        mg = run.metagame(run.populations)
        stack = mg.mean
        any_index = tuple(pop.index(ANY) for pop in run.populations)
        solutions = solve_meta(stack, stack[(slice(None), *any_index)], config.cce_tie_break)
        driver = solutions[config.meta_solver]
        report = IterationReport(
            iteration=t,
            populations=[list(p) for p in run.populations],
            game_actions=list(run.games[0].instructions()),
            metagame=MetaGameReport.of(mg),
            solutions={c: SolutionReport.of(s, stack, mg.labels) for c, s in solutions.items()},
            driver=config.meta_solver,
        )
        if t < config.iterations:
            results = []
            for p in run.oracle_players:
                phase(f"iteration {t}: {config.operator} oracle, player {p}")
                results.append(_oracle(run, p, t, stack, driver))
            report.oracles = results
            by_player = {r.player: r.added for r in results}
            report.added = [by_player.get(p) for p in range(len(run.populations))]
            for r in results:
                p = r.player
                if r.added is not None:
                    label = run.ensure([r.added])[0]
                    run.populations[p].append(label)
                    run.categories[p][label] = r.added_category or run.key
            converged = all(r.added is None for r in results)
        report.game_actions = list(run.games[0].instructions())
        report.llm = run.work(before)
        report.wall_s = round(time.perf_counter() - start, 3)
        reports.append(report)
        if on_iteration is not None:
            on_iteration(report)
        if converged and config.stop_when_converged:
            break
    return PSROResult(config=config, key=run.key, iterations=reports, converged=converged,
                      final_populations=[list(p) for p in run.populations])


def _oracle(run: _Run, player: int, t: int, stack: np.ndarray, sol: MetaSolution
            ) -> OracleResult:
    dev = deviation_payoffs(stack, sol.joint, player)
    scores = {label: float(v) for label, v in zip(run.populations[player], dev, strict=True)}
    score, ignored = run.scorer(player, sol.joint)
    inp = OracleInput(
        spec=run.games[0].spec, key=run.key, player=player,
        population=list(run.populations[player]), scores=scores,
        current_value=float(sol.payoffs(stack)[player]), score=score,
        proposer=run.proposer, k=run.config.candidates, iteration=t, seed=run.config.seed,
        tolerance=run.tolerance, categories=dict(run.categories[player]),
        dialogues=run.dialogues(player, sol) if run.config.operator == "trajectory" else [],
    )
    result = run_oracle(run.config.operator, inp)
    result.ignored_mass = ignored
    return result
