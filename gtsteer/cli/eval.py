"""`gtsteer eval ...`: measurements that say whether a domain's game can be trusted.

Each command lives in the driver of its own module under `gtsteer.runs` (the CLI only parses,
calls and prints): `steering` (does the model follow its instructions?), `reward` (does the
reward path score transcripts correctly?) and `verdict` (verdict-game policies' win rates).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gtsteer.cli.common import console, err_console, final, friendly_errors, parse_options
from gtsteer.cli.eval_verdict import verdict
from gtsteer.cli.options import (
    ConfigArg,
    DeprecatedSteeringSamples,
    Judges,
    LabelledDialogues,
    LabelledMessages,
    Llm,
    Out,
    Quiet,
    Scale,
    Seed,
    Served,
    SteeringSamples,
    WriterLlm,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.solve import print_roles
from gtsteer.cli.spend import spending
from gtsteer.evals.prompts import DEFINED, PLAIN
from gtsteer.evals.validation import ClassifierValidation
from gtsteer.runs import eval_judge, eval_reward, eval_reward_labelled, eval_steering
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import DEFAULT_LABELLED, JudgeOptions, ValidationReport
from gtsteer.runs.eval_reward import RewardOptions, RewardReport
from gtsteer.runs.eval_reward_labelled import NONE, LabelledOptions, LabelledReport
from gtsteer.runs.eval_steering import SteeringOptions, SteeringReport
from gtsteer.solvers.metrics import Proportion

#: The flags of `SteeringOptions` fields named otherwise, for its errors.
STEERING_FLAGS = {"samples": "--steering-samples", "validate_classifier_on": "--validate-judge"}

eval_app = typer.Typer(
    help="Evaluate a domain: steering accuracy, reward error, verdict-game win rates.",
    no_args_is_help=True,
)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _acc(acc: Proportion | None) -> str:
    if acc is None:
        return "—"
    return f"{_pct(acc.accuracy)} [{_pct(acc.ci_low)}, {_pct(acc.ci_high)}] ({acc.correct}/{acc.n})"


def print_steering(report: SteeringReport) -> None:
    """Accuracy per instruction without and with definitions, the unguided base rate, how often
    the message names the instruction (and unguided ones do), and the aggregate."""
    plain, defined = report.run(PLAIN), report.run(DEFINED)
    table = Table(
        "instruction", "accuracy (95% CI)", "with defs (95% CI)", "base rate",
        "names it (base)",
        title=f"steering: {report.domain} · {report.model} · classifier {report.classifier_model}"
        f" · {report.samples_per_instruction} per instruction ({report.speaker_role}'s message)",
    )
    first = plain or defined  # a refused variant (--validate-judge) is absent

    def find(run, row):
        return next((r for r in (run.per_instruction if run else [])
                     if (r.key, r.value) == (row.key, row.value)), None)

    for row in first.per_instruction if first else []:
        mine, other = find(plain, row), find(defined, row)
        one_key = first is not None and len(first.keys) == 1
        label = row.value if one_key else f"{row.key}={row.value}"
        table.add_row(label, _acc(mine.accuracy if mine else None),
                      _acc(other.accuracy if other else None), _pct(row.base_rate),
                      f"{_pct(row.mention_rate)} ({_pct(row.mention_base_rate)})")
    if first:
        table.add_row(
            "[bold]all[/]", _acc(plain.aggregate if plain else None),
            _acc(defined.aggregate if defined else None), f"chance {_pct(first.chance)}", "",
        )
        if first.calibrated:
            table.add_row(
                "all, uncalibrated", _acc(plain.aggregate_uncalibrated if plain else None),
                _acc(defined.aggregate_uncalibrated if defined else None), "", "",
            )
    console.print(table)
    for note in report.skipped:
        console.print(f"[yellow]not measured:[/] {escape(note)}")


@eval_app.command("steering")
@overridable
@spending(budget=True)
def steering(
    config: ConfigArg,
    llm: WriterLlm = None,
    classifier_llm: Annotated[
        str | None,
        typer.Option("--classifier-llm", "-c", help="Judge that classifies them: a model "
                     "(calibrated likelihoods), pairwise:MODEL, embed[:EMBEDDER] or parse (the "
                     "domain's exact reading, e.g. offers) (default: the config's "
                     "models.reader, else --llm)."),
    ] = None,
    served: Served = Served(),
    samples: SteeringSamples = None,
    old_samples: DeprecatedSteeringSamples = None,
    seed: Seed = 0,
    out: Out = None,
    quiet: Quiet = False,
    validate_judge: Annotated[
        Path | None,
        typer.Option("--validate-judge", help="Labelled messages (YAML) to validate the judge on "
                     "first; a variant not above chance there is refused."),
    ] = None,
    scale: Scale = Scale(),
) -> None:
    """Does the model follow its instructions? argmax_z P(z | message), with and without
    definitions; writes DIR/steering.json and confusion-matrix PNGs."""
    on_ray = scale.options()
    samples = steering_samples(samples, old_samples)
    with friendly_errors():
        ctx = served.context(llm=llm, reader=classifier_llm, out=out, ray=on_ray,
                             progress=not quiet)
        report = eval_steering.run(config, ctx, parse_options(
            SteeringOptions, STEERING_FLAGS, samples=samples, seed=seed,
            validate_classifier_on=validate_judge))
    where = report.folder
    print_validations(report.judge_validation)
    print_steering(report)
    print_roles(report.roles)
    if not report.judge_validation:
        console.print("[yellow]judge not validated:[/] --validate-judge "
                      "gtsteer/data/judge_labelled.yaml checks it on labelled messages first")
    final(f"report: {where / 'steering.json'}")


#: Messages per instruction when neither --steering-samples nor --samples is given.
STEERING_SAMPLES = 10


def steering_samples(samples: int | None, old: int | None) -> int:
    """--steering-samples, or the deprecated --samples with a warning (elsewhere --samples is
    S, the samples per message, as in `werewolf steer-train`; here it was the steering K)."""
    if old is None:
        return STEERING_SAMPLES if samples is None else samples
    if samples is not None:
        err_console.print("error: give --steering-samples only (--samples is its deprecated"
                          " spelling)")
        raise typer.Exit(2)
    err_console.print("[yellow]warning:[/] --samples is deprecated here: it is the steering K,"
                      " messages per instruction; use --steering-samples", highlight=False)
    return old


def print_validations(validations: list[ClassifierValidation]) -> None:
    if not validations:
        return
    table = Table("judge", "config", "variant", "accuracy (95% CI)", "chance", "passes",
                  title="judge on the labelled messages (passes: interval above chance)")
    for v in validations:
        table.add_row(v.judge, f"{v.config}.{v.key}", v.variant, _acc(v.accuracy),
                      _pct(v.chance), "yes" if v.passes else "[red]no[/]")
    console.print(table)


@eval_app.command("judge")
@spending(budget=True)
def judge(
    configs: Annotated[list[Path], typer.Argument(
        help="Domain configs with labelled messages, or werewolf_playstyle (the readings of"
        " `python -m lab werewolf-styles`, with --labelled"
        " gtsteer/data/werewolf_style_labelled.yaml).")],
    judges: Judges,
    labelled: LabelledMessages = DEFAULT_LABELLED,
    out: Out = None,
    quiet: Quiet = False,
) -> None:
    """Can a judge tell apart messages whose label is known? Accuracy per judge, config and
    variant with a 95% Wilson interval against chance; writes DIR/judge.json."""
    with friendly_errors():
        report = eval_judge.run(list(configs), RunContext.of(out=out, progress=not quiet),
                                parse_options(JudgeOptions, {"judges": "--judge"},
                                              judges=judges, labelled=labelled))
    print_validation_report(report)
    final(f"report: {report.folder / 'judge.json'}")


def print_validation_report(report: ValidationReport) -> None:
    print_validations(report.validations)
    for note in report.skipped:
        console.print(f"[yellow]not measured:[/] {escape(note)}")


def print_reward(report: RewardReport) -> None:
    """Norm and Sgn per reward path and outcome type."""
    low, high = report.payoff_bounds
    table = Table(
        "path", "outcome", "cases", "Norm (95% CI)", "Sgn: sign flips (95% CI)", "failed",
        title=f"reward error: {report.domain} · {report.model} · payoffs {low:g}..{high:g}",
    )
    for err in report.errors:
        norm = err.norm
        ci = "" if norm.ci_low is None else f" [{norm.ci_low:.3f}, {norm.ci_high:.3f}]"
        flips = err.sign_flips
        sgn = "—" if flips is None else (
            f"{flips.accuracy:.3f} [{flips.ci_low:.3f}, {flips.ci_high:.3f}]")
        bold = err.outcome == "all"
        table.add_row(
            err.path, f"[bold]{err.outcome}[/]" if bold else err.outcome, str(err.cases),
            "—" if norm.n == 0 else f"{norm.mean:.3f}{ci}", sgn, str(err.failures),
            end_section=bold,
        )
    console.print(table)
    console.print(
        f"configured = {report.configured_path}; free = the LLM computes the payoffs itself."
    )


def print_labelled(report: LabelledReport) -> None:
    """Per reading, the share of labelled dialogues read right, overall and by label kind;
    then the items some reading got wrong."""
    table = Table(
        "reading", "labels", "items", "right (95% CI)", "failed",
        title=f"agreement read: {report.domain} · {report.model} · {report.labelled}",
    )
    for acc in report.accuracy:
        bold = acc.kind == "all"
        name = f"{acc.path} (configured)" if acc.path == report.configured else acc.path
        table.add_row(name if bold else "", f"[bold]{acc.kind}[/]" if bold else acc.kind,
                      str(acc.items), _acc(acc.accuracy), str(acc.failures),
                      end_section=acc.kind == NONE)
    console.print(table)
    wrong = [item for item in report.items if not all(item.correct.values())]
    for item in wrong:
        misses = ", ".join(f"{p}: {item.read[p] or 'failed'}" for p in report.paths
                           if not item.correct[p])
        console.print(f"item {item.index}: labelled {escape(item.label)}; read {escape(misses)}")


@eval_app.command("reward")
@spending(budget=True)
def reward(
    config: Annotated[Path, typer.Argument(help="Domain config YAML with an exact utility.")],
    llm: Llm = "local",
    served: Served = Served(),
    cases: Annotated[
        int | None,
        typer.Option("--cases", "-n", help="Templated dialogues per outcome type (default 10).")
    ] = None,
    labelled: LabelledDialogues = None,
    seed: Seed = 0,
    out: Out = None,
    quiet: Quiet = False,
    scale: Scale = Scale(),
) -> None:
    """Does the reward path score dialogues right? Norm and Sgn per outcome type (valid,
    rejected, incomplete), configured path vs the LLM's own score; writes DIR/reward.json.
    With --labelled: how often each reading finds what hand-labelled dialogues agreed."""
    on_ray = scale.options()
    with friendly_errors():
        if labelled is not None and cases is not None:
            raise ValueError("--cases and --labelled: give one (templated cases, or labelled "
                             "dialogues)")
        ctx = served.context(llm=llm, out=out, ray=on_ray, progress=not quiet)
        if labelled is not None:
            found = eval_reward_labelled.run(config, ctx,
                                             LabelledOptions(labelled=labelled, seed=seed))
        else:
            report = eval_reward.run(config, ctx, parse_options(
                RewardOptions, cases=10 if cases is None else cases, seed=seed))
    if labelled is not None:
        print_labelled(found)
        final(f"report: {found.folder / eval_reward_labelled.FILE}")
        return
    print_reward(report)
    final(f"report: {report.folder / 'reward.json'}")


eval_app.command("verdict")(verdict)
