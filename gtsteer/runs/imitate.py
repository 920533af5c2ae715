"""`gtsteer imitate CONFIG`: solve (or reuse) N instances, distil the equilibrium, evaluate it.

    solve  -> DIR/solve/ (summary.json, games/<i>.json; reused when it matches the arguments)
    build  -> DIR/dataset/records.jsonl + embeddings.npy (one row per information state)
    train  -> DIR/model/ (DistilledPolicy: config.json + model.safetensors), training_curve.png
    eval   -> DIR/report.json: held-out fit, NashConv of the distilled policy, its values
              against `any` and CFR, and the DIM-vs-LLM meta-game with a 95% interval

Every argument is checked, and the embedder loaded, before the first LLM call. Like `solve`, a
run is a pure function of its arguments: a rerun makes no new LLM call, embeds nothing new
(the embedding cache) and writes the same numbers (only `llm_calls` and timings differ).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from gtsteer.binding import DomainSpec, expand_sync, make_game, make_instance
from gtsteer.binding import progress as shown
from gtsteer.domains import load_spec
from gtsteer.imitation import (
    DatasetError,
    DecisionRecord,
    DistilledPolicy,
    TrainConfig,
    TrainReport,
)
from gtsteer.imitation.build import records_from_game
from gtsteer.imitation.dataset import records_to_jsonl, split_instances
from gtsteer.imitation.evaluate import EvaluationSummary, InstanceEvaluation, evaluate_instance
from gtsteer.imitation.evaluate import summarize as summarize_evaluations
from gtsteer.imitation.train_types import FitMetrics
from gtsteer.llm import LLM, LLMCalls, LLMError, embed
from gtsteer.llm.embed import Embedder
from gtsteer.llm.extras import require
from gtsteer.runs.atomic import atomic_dir, atomic_path
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.output import (
    IN_PROGRESS,
    RunResult,
    check_in_dir,
    check_out_dir,
    finish_run_dir,
    prepare_run_dir,
    pyplot,
    save_png,
    write_text,
)
from gtsteer.runs.solve import DEFAULT_MAX_CALLS, SolveOptions, check_tree_size
from gtsteer.runs.solve import run as run_solve
from gtsteer.runs.solve_schema import SCHEMA_VERSION as SOLVE_SCHEMA_VERSION
from gtsteer.runs.solve_schema import Failure, GameRecord, SolveSummary
from gtsteer.solvers.cfr import DEFAULT_ITERATIONS, DEFAULT_SOLVER, check_solver_args

SCHEMA_VERSION = 1
DEFAULT_GAMES = 10
FEATURE_MODES: tuple[str, ...] = ("text", "struct", "both")
RECORDS_FILE = "dataset/records.jsonl"
EMBEDDINGS_FILE = "dataset/embeddings.npy"
MODEL_DIR = "model"
CURVE_FILE = "training_curve.png"
REPORT_FILE = "report.json"


class DatasetInfo(BaseModel):
    records: int
    reached_records: int  # weight > 0 under the CFR profile
    instances: list[int]
    train_instances: list[int]
    heldout_instances: list[int]
    embedding_dim: int
    feature_dim: int | None
    records_file: str  # relative to the run folder
    embeddings_file: str


class FeatureVariant(BaseModel):
    """One feature mode trained on the same split: does structure help where text does not?"""

    features: str
    heldout_fit: FitMetrics
    heldout: EvaluationSummary


class ImitationReport(RunResult):
    """`DIR/report.json` (schema in docs/IMITATION.md)."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    seed: int
    num_games: int
    solver: str
    iterations: int
    #: 1: each instance is its own game; K > 1: dealt games (see docs/SOLVE.md).
    num_deals: int
    solve_dir: str
    solve_reused: bool
    embedder: str
    features: str
    dataset: DatasetInfo
    training: TrainReport
    #: The headline: instances the policy never saw.
    heldout: EvaluationSummary
    #: The same numbers on the training instances (in-sample, for comparison).
    train: EvaluationSummary
    per_instance: list[InstanceEvaluation]
    feature_comparison: list[FeatureVariant]
    failures: list[Failure]
    llm_calls: LLMCalls
    model_dir: str
    training_curve: str

    def numbers(self) -> dict[str, Any]:
        """Everything that must be identical on a rerun."""
        data = self.model_dump(exclude={"llm_calls", "solve_reused", "solve_dir"})
        data["training"].pop("seconds")
        return data


def check_args(config: str | Path, options: ImitateOptions) -> tuple[TrainConfig, DomainSpec]:
    """Every option, before any model is loaded or called (`ValueError` names the flag).

    Returns the training config (a library caller's `train_config` with the flags' values)
    and the spec (with `deals` applied)."""
    games, holdout, features = options.games, options.holdout, options.features
    if games < 2:
        raise ValueError(f"--games: need at least 2 (training and held-out), got {games}")
    if features not in FEATURE_MODES:
        raise ValueError(
            f"--features: expected one of {', '.join(FEATURE_MODES)}, got {features!r}"
        )
    check_solver_args(options.solver, options.iterations)
    if holdout <= 0:
        raise ValueError(f"--holdout: the evaluation needs held-out instances, got {holdout}")
    flags = {"steps": options.steps, "holdout": holdout, "seed": options.seed,
             "features": features}
    try:
        train = TrainConfig(**flags)
    except ValidationError as exc:
        raise ValueError(
            "; ".join(f"--{e['loc'][0]}: {e['msg']}" for e in exc.errors())
        ) from None
    if options.train_config is not None:  # library callers may change more than the CLI exposes
        train = options.train_config.model_copy(update=flags)
    split_instances(range(games), holdout, options.seed)  # DatasetError (a ValueError) when empty
    spec = load_spec(config)  # ConfigError names the file and field
    return train, (spec if options.deals is None else spec.with_deals(options.deals))


class ImitateOptions(Options):
    """`gtsteer imitate`'s options (the model and the folder come with the run context)."""

    games: int = DEFAULT_GAMES
    #: Held-out instances: a fraction < 1 or a count >= 1.
    holdout: float = 0.2
    steps: int = 10_000
    #: The network's input (`FEATURE_MODES`; checked by the driver, which names the flag).
    features: str = "text"
    seed: int = 0
    solver: str = DEFAULT_SOLVER
    iterations: int = DEFAULT_ITERATIONS
    #: Private-information draws dealt at the root (None: the config's `num_deals`).
    deals: int | None = None
    #: Solve results to reuse or write (None: OUT/solve).
    solve_dir: str | Path | None = None
    #: Also train every feature mode and compare them on the held-out instances.
    compare_features: bool = False
    #: The training settings beyond the command line's (library callers).
    train_config: TrainConfig | None = None
    #: Refuse a run whose worst-case trees need more requests (None: no bound), before its
    #: folder is made (`--max-calls` raises it).
    max_calls: int | None = DEFAULT_MAX_CALLS


@driver("imitate")
def run(config: str | Path, ctx: RunContext, options: ImitateOptions) -> ImitationReport:
    """`gtsteer imitate`: the whole pipeline; writes the run folder and returns its report.

    `deals` (default: the config's `num_deals`) > 1 solves dealt games, as `gtsteer solve --deals`;
    each instance is still one unit of the train/held-out split. The model: the context's
    writer (`--llm`); the embedder: its `embedder` (a name or an `Embedder`; default MiniLM)."""
    train, spec = check_args(config, options)
    games, seed = options.games, options.seed
    check_tree_size(spec, games, options.max_calls, report=ctx.report)  # before the folder
    model_name = ctx.writer_name(spec)
    out = ctx.folder("imitate", config, model_name, seed)
    solved_dir = Path(options.solve_dir) if options.solve_dir is not None else out / "solve"
    check_out_dir(out)  # paths before the embedder loads or anything is solved
    check_in_dir(solved_dir, "--solve-dir")
    require("torch", "imitate", "gtsteer imitate")  # before anything is solved
    embedder = ctx.given("embedder")
    emb = embedder if isinstance(embedder, Embedder) else embed.get_embedder(embedder, strict=True)
    client, _, _ = ctx.roles(spec)
    prepare_run_dir(out, subdirs=("dataset", MODEL_DIR), summary=REPORT_FILE)
    before = client.usage

    args = SolveArgs(str(config), spec, model_name, games, seed, options.solver,
                     options.iterations)
    summary, game_records, reused = _solve_or_reuse(args, client, solved_dir, ctx.progress,
                                                    options.max_calls)
    records, dialogue_games = _build(spec, client, config, seed, game_records, summary.failures)
    if not records:
        raise DatasetError(
            f"dataset: no decision records: every instance failed ({len(summary.failures)} "
            "failures, see the solve summary)"
        )
    policy, training, embeddings = _embed_and_train(out, records, emb, train, spec, seed,
                                                    str(config))

    shown.phase("evaluate (held-out instances)")
    evaluations = _evaluate(policy, records, embeddings, dialogue_games)
    held = set(training.heldout_instances)
    heldout = summarize_evaluations([e for e in evaluations if e.instance in held])
    comparison = _compare_features(policy, training, records, emb, train, embeddings,
                                   dialogue_games, spec.name) if options.compare_features else []

    after = client.usage
    report = ImitationReport(
        config=str(config),
        domain=spec.name,
        model=model_name,
        seed=seed,
        num_games=games,
        solver=options.solver,
        iterations=options.iterations,
        num_deals=spec.num_deals,
        solve_dir=str(solved_dir),
        solve_reused=reused,
        embedder=emb.name,
        features=options.features,
        dataset=_dataset_info(records, training, emb),
        training=training,
        heldout=heldout,
        train=summarize_evaluations([e for e in evaluations if e.instance not in held]),
        per_instance=evaluations,
        feature_comparison=comparison,
        failures=summary.failures,
        llm_calls=after.since(before),
        model_dir=MODEL_DIR,
        training_curve=CURVE_FILE,
    )
    finish_run_dir(out, REPORT_FILE, report)
    return report.written_to(out)


def _embed_and_train(out: Path, records: list[DecisionRecord], emb: Embedder, train: TrainConfig,
                     spec: DomainSpec, seed: int, config: str
                     ) -> tuple[DistilledPolicy, TrainReport, np.ndarray]:
    """Embed the dataset's texts, train the policy on them and save both (with the curve)."""
    from gtsteer.imitation.train import train_policy  # torch: only when training (CLI startup)

    shown.phase("embed")
    embeddings = emb.embed([r.text for r in records], progress=partial(shown.step, "texts"))
    write_text(out / RECORDS_FILE, records_to_jsonl(records))
    with atomic_path(out / EMBEDDINGS_FILE) as tmp:
        np.save(tmp, embeddings)
    shown.phase("train")
    policy, training = train_policy(
        records, emb, train, partial(shown.step, "steps"),
        embeddings=embeddings, domain=spec.name,
    )
    # What makes the dataset's instances again (`gtsteer evaluate` skips them as not fresh).
    policy.config.metadata.update(instance_seed=seed, num_deals=spec.num_deals, config=config)
    with atomic_dir(out / MODEL_DIR) as tmp:
        policy.save(tmp)
    _plot_curve(training, out / CURVE_FILE)
    return policy, training, embeddings


def _compare_features(policy: DistilledPolicy, training: TrainReport,
                      records: list[DecisionRecord], emb: Embedder, train: TrainConfig,
                      embeddings: np.ndarray, dialogue_games: dict[int, Any], domain: str
                      ) -> list[FeatureVariant]:
    """`--compare-features`: every feature mode's held-out fit and play, the trained policy's
    own mode reused rather than trained again."""
    from gtsteer.imitation.train import train_policy  # torch: only when training (CLI startup)

    held = set(training.heldout_instances)
    comparison = []
    for mode in FEATURE_MODES:
        variant, fit = (policy, training) if mode == train.features else train_policy(
            records, emb, train.model_copy(update={"features": mode}),
            embeddings=embeddings, domain=domain,
        )
        assert fit.heldout is not None
        ev = _evaluate(variant, records, embeddings, dialogue_games, only=held)
        comparison.append(FeatureVariant(
            features=mode, heldout_fit=fit.heldout, heldout=summarize_evaluations(ev)
        ))
    return comparison


def _dataset_info(records: list[DecisionRecord], training: TrainReport, emb: Embedder
                  ) -> DatasetInfo:
    """What the report says of the dataset: its size, instances, split and dimensions."""
    feature_dims = {None if r.features is None else len(r.features) for r in records}
    return DatasetInfo(
        records=len(records),
        reached_records=sum(r.weight > 0 for r in records),
        instances=sorted({r.instance for r in records}),
        train_instances=training.train_instances,
        heldout_instances=training.heldout_instances,
        embedding_dim=emb.dim,
        feature_dim=feature_dims.pop() if len(feature_dims) == 1 else None,
        records_file=RECORDS_FILE,
        embeddings_file=EMBEDDINGS_FILE,
    )


@dataclass(frozen=True)
class SolveArgs:
    """What a solve result must match to be reused."""

    config: str
    spec: DomainSpec  # with --deals applied
    model: str
    games: int
    seed: int
    solver: str
    iterations: int


def _solve_or_reuse(
    args: SolveArgs, client: LLM, solve_dir: Path, progress: bool, max_calls: int | None
) -> tuple[SolveSummary, dict[int, GameRecord], bool]:
    """The solve results for these arguments: read from `solve_dir` when they match, else
    made by `gtsteer solve`'s driver (whose LLM calls are cache hits after the first run)."""
    summary = _matching_summary(solve_dir, args)
    reused = summary is not None
    if summary is None:
        summary = run_solve(
            args.config, RunContext.of(llm=client, out=solve_dir, progress=progress),
            SolveOptions(games=args.games, iterations=args.iterations, solver=args.solver,
                         seed=args.seed, deals=args.spec.num_deals, max_calls=max_calls),
        )
    records = {}
    for index in summary.instances:
        path = solve_dir / "games" / f"{index}.json"
        records[index] = GameRecord.model_validate_json(path.read_text(encoding="utf-8"))
    return summary, records, reused


def _matching_summary(solve_dir: Path, args: SolveArgs) -> SolveSummary | None:
    """A finished solve with exactly these arguments and this config's instances, or None."""
    try:
        summary = SolveSummary.model_validate_json(
            (solve_dir / "summary.json").read_text(encoding="utf-8")
        )
    except (OSError, ValidationError):
        return None
    if (solve_dir / IN_PROGRESS).exists():  # a rerun into it was killed: not a finished solve
        return None
    if summary.schema_version != SOLVE_SCHEMA_VERSION:  # older results: solved again
        return None
    wanted = (args.config, args.model, args.games, args.seed, args.solver, args.iterations,
              args.spec.num_deals)
    found = (summary.config, summary.model, summary.num_games, summary.seed, summary.solver,
             summary.iterations, summary.num_deals)
    if wanted != found:
        return None
    for index in summary.instances:
        try:
            record = GameRecord.model_validate_json(
                (solve_dir / "games" / f"{index}.json").read_text(encoding="utf-8")
            )
        except (OSError, ValidationError):
            return None
        # The config file may have changed since: its instances must be the solved ones.
        if record.instance != make_instance(args.spec, index, args.seed).model_dump():
            return None
    return summary


def _build(
    spec: Any,
    client: LLM,
    config_path: str | Path,
    seed: int,
    game_records: dict[int, GameRecord],
    failures: list[Failure],
) -> tuple[list[DecisionRecord], dict[int, Any]]:
    """Records of every solved instance, and the expanded games (kept for evaluation)."""
    records: list[DecisionRecord] = []
    games: dict[int, Any] = {}
    shown.phase("dataset")
    for done, (index, solved) in enumerate(sorted(game_records.items()), 1):
        game = make_game(spec, make_instance(spec, index, seed), client,
                         config=str(config_path), seed=seed)
        try:
            report = expand_sync(game, progress=False)  # cache hits: fills the game's tables
        except LLMError as exc:
            failures.append(Failure(instance=index, stage="dataset", reason=str(exc)))
            continue
        if report.failed:
            failures.append(Failure(instance=index, stage="dataset", reason=str(report.reason)))
            continue
        policy = {p.info_state: p.probs for p in solved.policy}
        records += records_from_game(game, policy, index)
        games[index] = game
        shown.step("solved instances", done, len(game_records))
    return records, games


def _evaluate(
    policy: Any,
    records: list[DecisionRecord],
    embeddings: np.ndarray,
    games: dict[int, Any],
    only: set[int] | None = None,
) -> list[InstanceEvaluation]:
    rows: dict[int, list[int]] = {}
    for i, r in enumerate(records):
        if only is None or r.instance in only:
            rows.setdefault(r.instance, []).append(i)
    return [
        evaluate_instance(
            games[index], policy, [records[i] for i in idx], embeddings=embeddings[idx]
        )
        for index, idx in sorted(rows.items())
    ]


def _plot_curve(report: TrainReport, path: Path) -> None:
    plt = pyplot()

    steps = [p.step for p in report.curve]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(steps, [p.train_loss for p in report.curve], label="training loss (batch CE)")
    held = [h for p in report.curve if (h := p.heldout_cross_entropy) is not None]
    if len(held) == len(steps):
        ax.plot(steps, held, label="held-out cross-entropy (reach-weighted)")
    if report.heldout is not None and report.heldout.target_entropy is not None:
        ax.axhline(report.heldout.target_entropy, ls="--", c="gray",
                   label="held-out target entropy (perfect fit)")
    ax.set_xlabel("step")
    ax.set_ylabel("nats")
    ax.set_title(f"distilled policy: {report.config.features} features, {report.embedder or '-'}")
    ax.legend()
    save_png(fig, path)
