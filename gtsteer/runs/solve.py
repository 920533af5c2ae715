"""`gtsteer solve`: config -> instances -> expanded games -> CFR -> metrics -> result files.

A run is a pure function of (config, model, seed, solver, iterations): the config is validated
before any LLM call, every LLM answer comes through the on-disk cache, CFR and the exact
evaluator are deterministic, so a rerun makes no new call and writes the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from gtsteer.binding import (
    DialogueGame,
    Instance,
    cost_profile,
    expand_sync,
    generate_instances,
    make_game,
)
from gtsteer.binding import progress as shown
from gtsteer.binding.llm_instances import read_instances
from gtsteer.binding.spec import DomainSpec
from gtsteer.binding.terminals import terminal_rows
from gtsteer.binding.tree_size import short, tree_size
from gtsteer.domains import load_spec
from gtsteer.evals.solve_metrics import distributions, head_to_head, heldout_metrics, solved_metrics
from gtsteer.llm import LLM, LLMCalls, StorageError
from gtsteer.llm.embed import Embedder
from gtsteer.llm.secrets import scrub_secrets
from gtsteer.llm.session import BudgetExceeded
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.ledger import Ledger, hashed_key
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import (
    check_in_file,
    check_out_dir,
    finish_run_dir,
    write_text,
)
from gtsteer.runs.solve_schema import (
    SCHEMA_VERSION,
    Failure,
    GameRecord,
    InfoStatePolicy,
    SolveSummary,
)
from gtsteer.runs.units import UnitsRun
from gtsteer.solvers.analysis import analyze
from gtsteer.solvers.cfr import (
    DEFAULT_ITERATIONS,
    DEFAULT_SOLVER,
    CFRResult,
    check_solver_args,
    solve_cfr,
)
from gtsteer.solvers.heldout import (
    ReaderFactory,
    measure_heldout,
)
from gtsteer.solvers.metrics import Metric

SUMMARY_FILE = "summary.json"
#: LLM requests a run may need at most (worst case, `tree_size`) before it is refused unless
#: `max_calls` (`--max-calls`) is raised: ~120 times the 30-game schedule_meeting_dow run.
DEFAULT_MAX_CALLS = 1_000_000
#: The held-out replays that read the fresh text (`gtsteer.imitation.readers`), beside the
#: history replay that every `--heldout` run measures.
READERS = ("nearest", "distilled")


def tree_bound(max_calls: int | None) -> int:
    """The worst-case requests a command line's run may need before any call: the default
    bound, or a larger `--max-calls` (which also stops the run after that many new calls, so a
    smaller one needs no refusal up front: a cached rerun of a large tree then costs nothing)."""
    return max(DEFAULT_MAX_CALLS, max_calls or 0)


class GameTooLargeError(ValueError):
    """The worst-case tree of a run needs more LLM requests than its bound allows."""


def check_tree_size(spec: DomainSpec, games: int, max_calls: int | None, *, heldout: bool = False,
                    report: Callable[[str], None] | None = None) -> int:
    """The worst-case LLM requests of `games` instances (`tree_size`), told to `report` in one
    line; `GameTooLargeError` past `max_calls` (None: no bound). Returns the request count."""
    size = tree_size(spec)
    per_game = size.llm_calls * (2 if heldout else 1)  # held out: part of a second tree
    total = per_game * games
    line = (f"game tree: at most {short(size.nodes)} nodes and {short(per_game)} LLM requests per"
            f" instance, {short(total)} for {games} instance(s)"
            + (f" (bound {max_calls:,}, --max-calls)" if max_calls is not None else ""))
    if report is not None:
        report(line)
    if max_calls is not None and total > max_calls:
        raise GameTooLargeError(
            f"{line}: past the bound. Lower num_llm_seeds ({spec.num_llm_seeds}), "
            f"num_max_replies ({spec.num_max_replies}), the instructions "
            f"({len(spec.instructions())}) or the instances, or raise --max-calls")
    return total


#: OpenSpiel reads a game's seed parameter into a C++ `int` (32 bits): a larger seed fails
#: every instance at build ("Unable to cast Python instance of type int").
SEED_RANGE = (-(2**31), 2**31 - 1)


def check_seed(seed: int) -> None:
    """A run's seed, as every driver that builds games checks it (OpenSpiel's C++ `int`)."""
    if not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise ValueError(f"seed: must be a 32-bit integer ({SEED_RANGE[0]} .. {SEED_RANGE[1]}),"
                         f" got {seed}")


def load_instances(config: str | Path, games: int, deals: int | None = None,
                   instances_file: str | Path | None = None, seed: int = 0
                   ) -> tuple[DomainSpec, list[Instance]]:
    """A run's spec (`deals` applied) and its instances: those of `instances_file` (checked
    against the config), else `games` generated ones of `seed`; all before any LLM call."""
    if instances_file is not None:
        check_in_file(instances_file, "--instances")
    spec = load_spec(config)  # ConfigError (also the domain's own checks) before any LLM
    if instances_file is not None:
        chosen = read_instances(instances_file, spec)
    elif games < 1:
        raise ValueError(f"games: must be >= 1, got {games}")
    else:
        chosen = generate_instances(spec, games, seed)
    check_seed(seed)
    return (spec if deals is None else spec.with_deals(deals)), chosen


class SolveOptions(Options):
    """`gtsteer solve`'s options (the model, the folder and Ray come with the run context)."""

    #: Generated instances (`--games`); ignored with `instances_file`.
    games: int = 1
    #: Play the instances of this JSONL file (`--instances`) instead of generated ones.
    instances_file: str | Path | None = None
    iterations: int = DEFAULT_ITERATIONS
    solver: str = DEFAULT_SOLVER
    seed: int = 0
    #: Private-information draws dealt at the root (None: the config's `num_deals`).
    deals: int | None = None
    #: Also measure the CFR gain on fresh samples (`--heldout`).
    heldout: bool = False
    #: The held-out replays that read the fresh text (`--heldout-readers`).
    readers: tuple[str, ...] = READERS
    #: Refuse a run whose worst-case trees need more requests (None: no bound).
    max_calls: int | None = DEFAULT_MAX_CALLS
    #: Keep the instances an earlier run with the same settings solved (`--resume`).
    resume: bool = False


@driver("solve")
def run(config: str | Path, ctx: RunContext, options: SolveOptions) -> SolveSummary:
    """`gtsteer solve`: solve the instances of a domain config; write `games/<i>.json` and
    `summary.json` (default folder: `results/<config>-<model>-<seed>`).

    A dealt game (`deals` > 1) deals one of `deals` private-information draws at its root, so
    no player's strategy can use another's private information. A failure inside one instance
    marks that instance failed with its stage and reason; the others still finish. `heldout`
    replays each solved policy on fresh LLM samples of the same positions
    (`gtsteer.solvers.heldout`): samples CFR did not choose from, so selection on sampling
    noise does not count as gain (it costs part of a second tree per instance); its `readers`
    read the fresh text through the context's `embedder` (a name, or an `Embedder` without
    Ray). `resume` solves only the instances without a record of the same settings, so a
    stopped run continues where it stopped, even on a machine without its LLM cache. Each
    instance is one unit of the context's executor (on Ray: one task each), same results.
    """
    if ctx.out is not None:
        check_out_dir(ctx.out)  # bad paths before any work
    spec, chosen = load_instances(config, options.games, options.deals, options.instances_file,
                                  options.seed)
    check_solver_args(options.solver, options.iterations)
    shown.expect(check_tree_size(spec, len(chosen), options.max_calls, heldout=options.heldout,
                                 report=ctx.report))
    embedder = ctx.given("embedder")
    _check_readers(options, embedder, on_ray=ctx.ray is not None)
    model, _, role_models = ctx.roles(spec)
    out = ctx.folder("solve", config, model, options.seed)
    jobs = [InstanceJob(spec, instance, str(config), options.seed, options.solver,
                        options.iterations, options.heldout,
                        progress=ctx.progress and ctx.ray is None,  # on Ray: one bar of instances
                        readers=tuple(options.readers) if options.heldout else (),
                        embedder=embedder)
            for instance in chosen]
    keys = {job.instance.index: run_key(job, model.model) for job in jobs}
    resume = options.resume
    ledger = Ledger.open(out, "games", keys, GameRecord, resume=resume, summary=SUMMARY_FILE)
    kept = ledger.kept(keys, lambda i, r: r.status == "solved" and r.index == i) if resume \
        else {}
    todo = [job for job in jobs if job.instance.index not in kept]
    if resume and ctx.report is not None and kept:
        ctx.report(f"resuming: {len(kept)} of {len(jobs)} instances already solved in {out}")

    def write_game(_: int, done: InstanceOutcome) -> None:
        done.record.run_key = keys[done.record.index]
        if done.terminals is not None:
            write_text(out / "games" / f"{done.record.index}.terminals.jsonl", done.terminals)
        ledger.add(done.record.index, done.record)

    units_run = ctx.executor.run(solve_instance, todo, model, on_result=write_game,
                                 label="instances")
    solved_now = {done.record.index: done.record for done in units_run.values}
    records = [kept.get(job.instance.index) or solved_now[job.instance.index] for job in jobs]
    summary = summarize(str(config), spec, options, len(jobs), model.model, role_models, records,
                        units_run)
    finish_run_dir(out, SUMMARY_FILE, summary)
    return summary.written_to(out)


def _check_readers(options: SolveOptions, embedder: str | Embedder | None, *, on_ray: bool
                   ) -> None:
    """The held-out readers and their embedder, checked before any LLM call."""
    readers = options.readers
    unknown = sorted(set(readers) - set(READERS))
    if unknown:
        raise ValueError(f"readers: unknown {unknown}; choose from {list(READERS)}")
    if on_ray and isinstance(embedder, Embedder):
        raise ValueError("embedder: give a name on Ray (each worker loads its own)")
    if options.heldout and readers and not isinstance(embedder, Embedder):
        from gtsteer.llm.embed import get_embedder

        get_embedder(embedder, strict=True)  # an unusable name fails before any LLM call


def summarize(config: str, spec: DomainSpec, options: SolveOptions, games: int, model_name: str,
              role_models: dict[str, RoleRecord], records: list[GameRecord],
              units_run: UnitsRun[InstanceOutcome] | None = None) -> SolveSummary:
    """The run's summary.json from every instance's record (kept ones and those solved now);
    `units_run` None: records read back without running (no calls counted: the lab's partial
    Table 1 rows)."""
    units_run = units_run or UnitsRun([], LLMCalls())
    instances_file = options.instances_file
    # From every record, kept ones too: a fully resumed run solved nothing itself.
    backend = next((r.solver_backend for r in reversed(records) if r.solver_backend), "")
    failures = [
        Failure(instance=r.index, stage=r.failure_stage or "expand", reason=r.failure or "")
        for r in records
        if r.status == "failed"
    ]
    clipped = sum(int((r.expansion or {}).get("clipped_rewards", 0)) for r in records)
    echoed = sum(int((r.expansion or {}).get("echoed_messages", 0)) for r in records)
    roles = list(spec.players)
    held = [r.heldout for r in records if r.heldout is not None]

    summary = SolveSummary(
        config=config,
        domain=spec.name,
        model=model_name,
        roles=role_models,
        seed=options.seed,
        instances_file=None if instances_file is None else str(instances_file),
        num_games=games,
        mode="dealt" if spec.num_deals > 1 else "per_instance",
        num_deals=spec.num_deals,
        num_solved=sum(r.status == "solved" for r in records),
        num_failed=len(failures),
        num_llm_seeds=spec.num_llm_seeds,
        solver=options.solver,
        iterations=options.iterations,
        solver_backend=backend,
        payoff_bounds=(spec.payoff.min, spec.payoff.max),
        instances=[r.index for r in records if r.values is not None],
        metrics=None,
        head_to_head=None,
        instruction_distribution=[],
        llm_calls=units_run.calls,
        llm_cost_usd=units_run.cost_usd if units_run.priced else None,
        llm_modes=units_run.capabilities,
        failures=failures,
        clipped_rewards=clipped,
        echoed_messages=echoed,
        heldout=options.heldout,
        heldout_instances=[r.index for r in records if r.heldout is not None],
        heldout_decisions=sum(h.decisions for h in held),
        heldout_borrowed=sum(h.borrowed for h in held),
        heldout_unmatched=sum(h.unmatched for h in held),
        heldout_pooled=sum(h.pooled for h in held),
    )
    solved = [r.values for r in records if r.values is not None]
    if solved:
        summary.metrics = solved_metrics(solved)
        if held:
            summary.metrics.cfr_gain_heldout = Metric.of([h.cfr_gain for h in held])
            summary.metrics.cfr_gain_heldout_normalized = Metric.of(
                [h.cfr_gain_normalized for h in held])
            summary.heldout_metrics = heldout_metrics(held)
        summary.head_to_head = head_to_head(solved)
        summary.instruction_distribution = distributions(solved, roles)
    return summary


@dataclass(frozen=True)
class InstanceJob:
    """One instance's work, as a serial loop or a Ray task receives it."""

    spec: DomainSpec
    instance: Instance
    config: str
    seed: int
    solver: str
    iterations: int
    heldout: bool
    progress: bool
    readers: tuple[str, ...] = ()
    embedder: str | Embedder | None = None


def run_key(job: InstanceJob, model: str) -> str:
    """What decides an instance's record: the bound spec, its instance, the model, solver,
    iterations, seed and the held-out measure's settings (`resume` reuses a record only
    under the same key). An `Embedder` object is keyed by its name."""
    return hashed_key(job.spec.model_dump(mode="json"), job.spec.hooks.fingerprint(),
                      job.instance.model_dump(mode="json"), model, job.seed, job.solver,
                      job.iterations, job.heldout, list(job.readers),
                      getattr(job.embedder, "name", job.embedder), SCHEMA_VERSION)


@dataclass
class InstanceOutcome:
    """One instance's record and the expanded tree's terminals as JSONL (`terminal_rows`; None
    before expansion)."""

    record: GameRecord
    terminals: str | None = None


def solve_instance(job: InstanceJob, model: LLM) -> InstanceOutcome:
    """The unit of `gtsteer solve`: build, expand, solve and measure one instance."""
    build = partial(make_game, job.spec, job.instance, model, config=job.config, seed=job.seed)
    # Samples S.. are disjoint from the solved tree's 0..S-1 (S: the most of any depth).
    fresh = partial(build, sample_offset=job.spec.max_llm_seeds) if job.heldout else None
    readers = reader_factories(job.readers, job.embedder) if job.heldout else {}
    return _solve_instance(build, job.instance, job.solver, job.iterations, job.progress, fresh,
                           readers)


def reader_factories(names: Sequence[str], embedder: str | Embedder | None
                     ) -> dict[str, ReaderFactory]:
    """The text-reading replays called `names` (`READERS`), reading through `embedder`."""
    if not names:
        return {}
    from gtsteer.imitation.readers import distilled_reader, nearest_reader
    from gtsteer.llm.embed import get_embedder

    emb = embedder if isinstance(embedder, Embedder) else get_embedder(embedder, strict=True)
    made: dict[str, Callable[[Embedder], ReaderFactory]] = {
        "nearest": nearest_reader, "distilled": distilled_reader}
    return {name: made[name](emb) for name in names}


def _solve_instance(
    build: Callable[[], DialogueGame],
    instance: Instance,
    solver: str,
    iterations: int,
    progress: bool,
    build_heldout: Callable[[], DialogueGame] | None = None,
    readers: Mapping[str, ReaderFactory] | None = None,
) -> InstanceOutcome:
    """Build, expand, solve and measure one game. Any exception (an LLM error, a utility bug,
    a SpielError in a metric) marks this record failed with its stage, never the whole run.
    A held-out tree that fails only records `heldout_failure`: the solved result stands."""
    record = GameRecord(index=instance.index, instance=instance.model_dump(), status="failed")
    done = InstanceOutcome(record)
    stage = "build"
    try:
        game = build()
        if game.dealt:
            record.deals = [d.private_info for d in game.deals]
        record.payoff_bounds = (game.min_utility(), game.max_utility())
        stage = "expand"
        shown.phase("expand")
        report = expand_sync(game, progress=progress)
        record.expansion = _dump(report)
        done.terminals = "".join(row.model_dump_json() + "\n" for row in terminal_rows(game))
        if report.failed:
            record.failure_stage = stage
            record.failure = scrub_secrets(str(report.reason or "expansion failed"))
            return done
        stage = "solve"
        shown.phase(f"solve ({solver})")
        with cost_profile.phase("CFR", game.llm):  # no model call: its seconds, when profiled
            result = solve_cfr(game, solver=solver, iterations=iterations)
        stage = "metrics"
        shown.phase("metrics")
        _fill_record(record, game, result)
        if build_heldout is not None:
            try:
                shown.phase("held-out")
                with cost_profile.scope("fresh"):
                    record.heldout = measure_heldout(game, result.policy, build_heldout(),
                                                     readers=readers, progress=progress)
            except (StorageError, BudgetExceeded):
                raise
            except Exception as exc:  # noqa: BLE001 - the in-sample result must survive
                record.heldout_failure = scrub_secrets(f"{type(exc).__name__}: {exc}")
        record.solver_backend = result.backend
        return done
    except (StorageError, BudgetExceeded):  # no game's fault (a damaged cache, a full disk,
        raise  # the run's budget): stop the run
    except Exception as exc:  # noqa: BLE001 - isolation is the point; the reason is recorded
        record.status, record.values, record.policy, record.info_states = "failed", None, [], 0
        record.failure_stage, record.failure = stage, scrub_secrets(f"{type(exc).__name__}: {exc}")
        return done


def _fill_record(record: GameRecord, game: Any, result: CFRResult) -> None:
    n = game.num_players()
    labels = [list(game.instructions(p)) for p in range(n)]
    any_actions = [int(game.any_action(p)) for p in range(n)]
    players = result.players
    record.values = analyze(result.game, result.policy, labels, any_actions, game.spec.payoff.span)
    record.info_states = len(result.policy)
    record.policy = [
        InfoStatePolicy(
            player=players[key],
            info_state=key,
            probs={labels[players[key]][a]: p for a, p in probs},
        )
        for key, probs in sorted(result.policy.items())
    ]
    record.status = "solved"


def _dump(report: Any) -> dict[str, Any]:
    if hasattr(report, "model_dump"):
        return report.model_dump(mode="json")
    return {k: v for k, v in vars(report).items() if not k.startswith("_")}
