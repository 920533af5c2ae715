"""The Python API: `gtsteer.solve`, `gtsteer.psro`, `gtsteer.imitate` and `gtsteer.export`.

Each is the command of the same name with the same keywords as its flags (`--max-calls` is
`max_calls=`, `--quiet` is `quiet=`), the same defaults and the same default folder
(`results/<config>-<model>-<seed>`, relative to the working directory). Each builds the run
context and the command's options and calls its driver, `run(config, ctx, options)`
(`gtsteer.runs`), inside one metered session, and returns the driver's result with its folder
(`.folder`) and what the run spent (`.usage`: requests, tokens, cost, retries).

`config` is a YAML path, a shipped config's name (`gtsteer configs`) or a `DomainSpec`.
`llm` is a model string (`"fake"`, `"local"`, `"openai/gpt-4o-mini"`), a `gtsteer.LLM`, or a
`gtsteer.llm.Backend` object of the user's own: it is wrapped in an `LLM` (cache, retries,
metering) and needs no registration.

This module imports the drivers when a function is called, so `import gtsteer` stays light.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from gtsteer.binding.domain import GENERIC
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM, Backend
from gtsteer.llm.cache import default_cache_dir
from gtsteer.llm.rate import RateLimit
from gtsteer.llm.session import Budget, current, session
from gtsteer.solvers.cfr import DEFAULT_ITERATIONS, DEFAULT_SOLVER

if TYPE_CHECKING:
    from gtsteer.imitation import TrainConfig
    from gtsteer.llm.embed import Embedder
    from gtsteer.runs.context import RunContext
    from gtsteer.runs.export import ExportSummary
    from gtsteer.runs.imitate import ImitationReport
    from gtsteer.runs.output import RunResult
    from gtsteer.runs.psro import PSROSummary
    from gtsteer.runs.solve_schema import SolveSummary
    from gtsteer.runs.units import RayOptions
    from gtsteer.solvers.psro import IterationReport, PSROConfig

__all__ = ["export", "imitate", "psro", "solve"]

#: What `llm=` takes: a model string, a client, or a user's backend.
Model = str | LLM | Backend
Config = str | Path | DomainSpec
R = TypeVar("R", bound="RunResult")


def as_model(llm: Model | None, name: str = "llm") -> str | LLM | None:
    """`llm` as a run context takes it: a user's `Backend` becomes a client of its own."""
    if llm is None or isinstance(llm, str | LLM):
        return llm
    if isinstance(llm, Backend):
        return LLM(llm.model, backend=llm)
    raise TypeError(f"{name}: expected a model string, a gtsteer.LLM or a gtsteer.llm.Backend,"
                    f" got {type(llm).__name__}")


def config_path(config: Config) -> str | Path:
    """A path the drivers read (they also record it and hand it to Ray workers): a
    `DomainSpec` is written once, by its content, under the cache folder as `<name>.yaml`, so
    its run folder is named after it and its summary names a file that reproduces it."""
    if not isinstance(config, DomainSpec):
        return config
    if config.domain is None and config._domain not in (None, GENERIC):
        raise ValueError("config: this DomainSpec is bound to a Domain object in code; give its"
                         " `domain:` a registered name or module:ATTR so the run can reload it,"
                         " or pass the config's path")
    text = yaml.safe_dump(config.model_dump(mode="json", exclude_unset=True, by_alias=True),
                          sort_keys=False, allow_unicode=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", config.name).strip("_") or "config"
    path = default_cache_dir() / "specs" / digest / f"{name}.yaml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def ray_of(ray: str | RayOptions | None, workers: int | None) -> RayOptions | None:
    """`--ray`/`--workers` as the executor takes them (None: serial)."""
    from gtsteer.runs.units import RayOptions

    if ray is None:
        if workers is not None:
            raise ValueError("workers: only with ray='local'")
        return None
    return ray if isinstance(ray, RayOptions) else RayOptions(ray.strip(), workers)


def context(*, llm: Model | None = None, proposer_llm: Model | None = None,
            api_base: str | None = None, api_key_env: str | None = None,
            request_timeout: float | None = None, max_wait: float | None = None,
            api_mode: str | None = None, out: str | Path | None = None,
            ray: str | RayOptions | None = None,
            workers: int | None = None, quiet: bool = False,
            report: Callable[[str], None] | None = None,
            on_phase: Callable[[str], None] | None = None,
            on_step: Callable[[Any], None] | None = None,
            embedder: str | Embedder | None = None) -> RunContext:
    """The run context of the command-line words (`RunContext.of`, models as `as_model`)."""
    from gtsteer.runs.context import RunContext
    from gtsteer.runs.models import Endpoint

    return RunContext.of(
        llm=as_model(llm), proposer=as_model(proposer_llm, "proposer_llm"),
        endpoint=Endpoint(api_base, api_key_env, key_field="api_key_env",
                          timeout_s=request_timeout, max_wait_s=max_wait, api_mode=api_mode),
        out=out, ray=ray_of(ray, workers), progress=not quiet, report=report,
        on_phase=on_phase, on_step=on_step, embedder=embedder)


@contextmanager
def metered(limits: dict[str, Any]
            ) -> Iterator[Callable[[RunContext, Callable[[], R], str], R]]:
    """The run's session (`--concurrency`, `--rpm`, `--max-calls/-tokens/-cost` in `limits`),
    opened before the run's clients are built, so a model string or a `Backend` is bounded
    and metered by it; a call made inside a session someone else opened, with no limit of its
    own, counts into that one. Yields `spent(ctx, work, name)`: runs `work` (under the
    progress display `name`, unless quiet) and gives its result what the run spent. A client
    the caller built before (an `LLM` given as `llm=`) keeps its own bounds and meter; its
    usage is added."""
    rate = RateLimit(limits.pop("concurrency", None), limits.pop("rpm", None))
    budget = Budget(**limits)
    with ExitStack() as stack:
        run = current()
        if run is None or rate.bounded or budget != Budget():
            run = stack.enter_context(session(rate, budget))

        def spent(ctx: RunContext, work: Callable[[], R], name: str) -> R:
            from gtsteer.binding.progress import shown

            clients = [m for m in ctx.models.values()
                       if isinstance(m, LLM) and m.session is not run]
            before, own = run.meter.snapshot(), [c.meter.snapshot() for c in clients]
            with shown(name, enabled=ctx.progress):  # the command's one display, on a terminal
                result = work()
            usage = run.meter.snapshot().minus(before)
            for client, start in zip(clients, own, strict=True):
                usage.add(client.meter.snapshot().minus(start))
            return result.spent(usage)

        yield spent


def _limits(max_calls: int | None, max_tokens: int | None, max_cost: float | None,
            concurrency: int | None, rpm: int | None) -> dict[str, Any]:
    return {"max_calls": max_calls, "max_tokens": max_tokens, "max_cost": max_cost,
            "concurrency": concurrency, "rpm": rpm}


def solve(
    config: Config, *, llm: Model | None = None, games: int = 1,
    instances: str | Path | None = None, iterations: int = DEFAULT_ITERATIONS,
    solver: str = DEFAULT_SOLVER, seed: int = 0, deals: int | None = None,
    out: str | Path | None = None, heldout: bool = False,
    heldout_readers: str | Sequence[str] | None = None, embedder: str | Embedder | None = None,
    resume: bool = False, max_calls: int | None = None, max_tokens: int | None = None,
    max_cost: float | None = None, concurrency: int | None = None, rpm: int | None = None,
    api_base: str | None = None, api_key_env: str | None = None,
    request_timeout: float | None = None, max_wait: float | None = None,
    api_mode: str | None = None,
    ray: str | RayOptions | None = None, workers: int | None = None, quiet: bool = False,
    report: Callable[[str], None] | None = None,
) -> SolveSummary:
    """`gtsteer solve`: expand each instance's game tree, solve it with CFR, measure, and write
    `summary.json` and `games/<i>.json` to the run folder. Returns the summary: `.metrics`
    (NashConv, CFR gain, each with a 95% interval over instances), `.policies()` (each
    instance's CFR policy), `.folder`, `.usage`. `heldout_readers`: a list or the CLI's comma
    string (None: all). `max_calls` both refuses a tree too large up front and stops the run
    after that many new calls, as on the command line."""
    from gtsteer.runs.solve import READERS, SolveOptions, run, tree_bound

    readers = (READERS if heldout_readers is None else
               [r.strip() for r in heldout_readers.split(",") if r.strip()]
               if isinstance(heldout_readers, str) else heldout_readers)
    options = SolveOptions(games=games, instances_file=instances, iterations=iterations,
                           solver=solver, seed=seed, deals=deals, heldout=heldout,
                           readers=tuple(readers), max_calls=tree_bound(max_calls), resume=resume)
    with metered(_limits(max_calls, max_tokens, max_cost, concurrency, rpm)) as spent:
        ctx = context(llm=llm, api_base=api_base, api_key_env=api_key_env,
                      request_timeout=request_timeout, max_wait=max_wait, api_mode=api_mode,
                      out=out, ray=ray, workers=workers, quiet=quiet, report=report,
                      embedder=embedder)
        return spent(ctx, lambda: run(config_path(config), ctx, options), "solve")


def psro(
    config: Config, *, llm: Model | None = None, proposer_llm: Model | None = None,
    games: int = 1, iterations: int | None = None, candidates: int | None = None,
    operator: str | None = None, meta_solver: str | None = None,
    gap_tolerance: float | None = None, heldout: bool | None = None,
    heldout_gate: bool | None = None, report_nash: bool | None = None,
    support_tolerance: float | None = None, oracle_player: Sequence[int] | None = None,
    settings: PSROConfig | None = None, deals: int | None = None, seed: int | None = None,
    out: str | Path | None = None, export_nfg: bool = False,
    instances: str | Path | None = None, reference: str | Path | None = None,
    max_calls: int | None = None, max_tokens: int | None = None, max_cost: float | None = None,
    concurrency: int | None = None, rpm: int | None = None, api_base: str | None = None,
    api_key_env: str | None = None, request_timeout: float | None = None,
    max_wait: float | None = None, api_mode: str | None = None,
    ray: str | RayOptions | None = None,
    workers: int | None = None, quiet: bool = True,
    on_iteration: Callable[[IterationReport], None] | None = None,
    on_phase: Callable[[str], None] | None = None, report: Callable[[str], None] | None = None,
) -> PSROSummary:
    """`gtsteer psro`: grow each player's instructions with LLM-proposed best responses and
    write `summary.json`. The PSRO settings (`iterations` .. `oracle_player`, `seed`) default
    to the command line's; `settings`, a `PSROConfig`, gives the rest (each keyword given wins
    over it). Returns the summary: `.iterations` (each meta-game's solutions, gaps and calls),
    `.final_populations`, `.converged`, `.folder`, `.usage`. `on_iteration` gets each
    iteration's report as it finishes; `quiet` (the default here) has no progress bar."""
    from gtsteer.runs.psro import PSROOptions, run
    from gtsteer.runs.solve import tree_bound
    from gtsteer.solvers.psro import PSROConfig

    given = {"iterations": iterations, "candidates": candidates, "operator": operator,
             "meta_solver": meta_solver, "gap_tolerance": gap_tolerance, "heldout": heldout,
             "heldout_gate": heldout_gate, "report_nash": report_nash,
             "support_tolerance": support_tolerance, "seed": seed,
             "oracle_players": None if oracle_player is None else list(oracle_player)}
    base = (settings or PSROConfig()).model_dump(exclude_unset=True)
    chosen = PSROConfig.model_validate(
        {**base, **{k: v for k, v in given.items() if v is not None}})
    options = PSROOptions(settings=chosen, games=games, deals=deals,
                          max_calls=tree_bound(max_calls), export_nfg=export_nfg,
                          instances_file=instances, reference=reference)
    with metered(_limits(max_calls, max_tokens, max_cost, concurrency, rpm)) as spent:
        ctx = context(llm=llm, proposer_llm=proposer_llm, api_base=api_base,
                      api_key_env=api_key_env, request_timeout=request_timeout,
                      max_wait=max_wait, api_mode=api_mode, out=out, ray=ray, workers=workers,
                      quiet=quiet, report=report, on_phase=on_phase, on_step=on_iteration)
        return spent(ctx, lambda: run(config_path(config), ctx, options), "psro")


def imitate(
    config: Config, *, llm: Model | None = "local", games: int | None = None,
    holdout: float = 0.2, steps: int = 10_000, embedder: str | Embedder | None = None,
    features: str = "text", out: str | Path | None = None, seed: int = 0,
    solver: str = DEFAULT_SOLVER, iterations: int = DEFAULT_ITERATIONS,
    deals: int | None = None, solve_dir: str | Path | None = None,
    compare_features: bool = False, train_config: TrainConfig | None = None,
    max_calls: int | None = None, max_tokens: int | None = None, max_cost: float | None = None,
    concurrency: int | None = None, rpm: int | None = None, api_base: str | None = None,
    api_key_env: str | None = None, request_timeout: float | None = None,
    max_wait: float | None = None, api_mode: str | None = None, quiet: bool = False,
) -> ImitationReport:
    """`gtsteer imitate` (the `imitate` extra): solve (or reuse) `games` instances (None: the
    command line's 10), distil the CFR policy into an MLP over text embeddings, and evaluate it
    on the held-out instances. Returns the report: `.heldout` (NashConv of the distilled
    policy and its gain, with intervals), `.training`, `.folder`, `.model_dir` (the policy
    `gtsteer.imitation.DistilledPolicy.load` reads), `.usage`."""
    from gtsteer.runs.imitate import DEFAULT_GAMES, ImitateOptions, run
    from gtsteer.runs.solve import tree_bound

    options = ImitateOptions(
        games=DEFAULT_GAMES if games is None else games, holdout=holdout, steps=steps,
        features=features, seed=seed, solver=solver, iterations=iterations,
        deals=deals, solve_dir=solve_dir, compare_features=compare_features,
        train_config=train_config, max_calls=tree_bound(max_calls))
    with metered(_limits(max_calls, max_tokens, max_cost, concurrency, rpm)) as spent:
        ctx = context(llm=llm, api_base=api_base, api_key_env=api_key_env,
                      request_timeout=request_timeout, max_wait=max_wait, api_mode=api_mode,
                      out=out, quiet=quiet, embedder=embedder)
        return spent(ctx, lambda: run(config_path(config), ctx, options), "imitate")


def export(
    config: Config, *, llm: Model | None = None, format: str = "efg", games: int = 1,
    seed: int = 0, deals: int | None = None, out: str | Path | None = None,
    max_calls: int | None = None, max_tokens: int | None = None, max_cost: float | None = None,
    concurrency: int | None = None, rpm: int | None = None, api_base: str | None = None,
    api_key_env: str | None = None, request_timeout: float | None = None,
    max_wait: float | None = None, api_mode: str | None = None, quiet: bool = False,
    report: Callable[[str], None] | None = None,
) -> ExportSummary:
    """`gtsteer export`: expand `games` instances as `solve` does and write each game tree as
    `games/<i>.efg` (Gambit's extensive form, read by OpenSpiel's `efg_game`) with a side file
    naming its information sets. Returns the summary: `.games` (each file and its size),
    `.folder`, `.usage`."""
    from gtsteer.runs.export import ExportOptions, run
    from gtsteer.runs.solve import tree_bound

    options = ExportOptions(fmt=format, games=games, seed=seed, deals=deals,
                            max_calls=tree_bound(max_calls))
    with metered(_limits(max_calls, max_tokens, max_cost, concurrency, rpm)) as spent:
        ctx = context(llm=llm, api_base=api_base, api_key_env=api_key_env,
                      request_timeout=request_timeout, max_wait=max_wait, api_mode=api_mode,
                      out=out, quiet=quiet, report=report)
        return spent(ctx, lambda: run(config_path(config), ctx, options), "export")
