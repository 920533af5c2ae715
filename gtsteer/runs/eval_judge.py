"""`gtsteer eval judge`: can a steering classifier tell apart messages whose label is known?

The driver of `gtsteer.evals.validation` (the classifiers, the accuracies and the refusal rule
live there): it validates every classifier given with `--judge` on every config's labelled
messages (gtsteer/data/judge_labelled.yaml by default), per variant, and writes
DIR/judge.json; `eval steering --validate-judge` validates the same way before it measures.
The command, its option and file keep the name `judge`; the code says steering classifier,
since "judge" is the verdict game's. A label set without a config (`label_spaces`:
`werewolf_playstyle`, the readings of `python -m lab werewolf-styles`) is named instead of a
config file.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from gtsteer.binding.progress import GatherBar
from gtsteer.binding.shipped import DATA_DIR
from gtsteer.domains import load_spec
from gtsteer.evals.classifiers import (
    SteeringClassifier,
    cannot_read,
    classifier_models,
    make_classifier,
)
from gtsteer.evals.prompts import VARIANTS, LabelSpace, Readable
from gtsteer.evals.validation import (
    ClassifierValidation,
    LabelledSet,
    labelled_for,
    validate_on_labelled,
)
from gtsteer.llm import LLMCalls, run_sync
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.output import RunResult, check_out_dir, write_json
from gtsteer.werewolf.style_lines import LABEL_KEY, LABEL_SET, READINGS

SCHEMA_VERSION = 1
#: The labelled set shipped with the repository.
DEFAULT_LABELLED = DATA_DIR / "judge_labelled.yaml"


class ValidationReport(RunResult):
    """`DIR/judge.json`."""

    schema_version: int = SCHEMA_VERSION
    labelled: str
    validations: list[ClassifierValidation]
    skipped: list[str] = Field(default_factory=list)
    llm_calls: LLMCalls


#: The Werewolf playstyle readings (`style_lines.READINGS`), as the classifiers take them.
STYLE_SPACE = LabelSpace(name=LABEL_SET, actions={LABEL_KEY: list(READINGS)},
                         instruction_definitions={LABEL_KEY: dict(READINGS)})


def label_spaces() -> dict[str, LabelSpace]:
    """The label sets without a config, by name."""
    return {STYLE_SPACE.name: STYLE_SPACE}


def readable(config: str | Path) -> Readable:
    """A config file, or the name of a label set without one (`label_spaces`)."""
    spaces = label_spaces()
    return spaces[str(config)] if str(config) in spaces else load_spec(config)


def load_labelled(path: str | Path = DEFAULT_LABELLED) -> LabelledSet:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"labelled messages: no file {path}")
    try:
        return LabelledSet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"labelled messages {path}: {exc}") from None


def validate_classifier(
    spec: Readable, classifier: SteeringClassifier, labelled: LabelledSet,
    variants: tuple[str, ...] = VARIANTS, *, progress: bool = False,
) -> list[ClassifierValidation]:
    """The classifier's accuracy on the config's labelled messages; [] where the set has none."""
    entry = labelled_for(spec, labelled)
    if entry is None:
        return []

    async def go() -> list[ClassifierValidation]:
        with GatherBar(progress) as bar:
            return await validate_on_labelled(spec, classifier, entry, variants, bar)

    return run_sync(go())


class JudgeOptions(Options):
    """`gtsteer eval judge`'s options: the classifiers to validate (`--judge`: a model,
    pairwise:<model>, embed) and the labelled messages (`--labelled`)."""

    judges: list[str]
    labelled: str | Path = DEFAULT_LABELLED


@driver("eval judge")
def run(config: list[str | Path], ctx: RunContext, options: JudgeOptions) -> ValidationReport:
    """`gtsteer eval judge`: validate every classifier on every config's labelled messages;
    write DIR/judge.json (default folder: results/eval-judge). The classifiers are the
    options' own, not the context's model roles."""
    classifiers, labelled_path = options.judges, options.labelled
    if not classifiers:
        # "judges": what the command line calls them (`gtsteer eval judge --judge`)
        raise ValueError("judges: give at least one (a model string, pairwise:<model>, embed)")
    specs = [readable(c) for c in config]  # ConfigError before any model is loaded
    labelled = load_labelled(labelled_path)
    out = check_out_dir(ctx.out if ctx.out is not None else Path("results") / "eval-judge")
    validations: list[ClassifierValidation] = []
    skipped: list[str] = []
    calls = LLMCalls()
    for name in classifiers:
        classifier = make_classifier(name)
        meters = classifier_models(classifier)
        before = [m.usage for m in meters]
        for spec in specs:
            if (reason := cannot_read(classifier, spec)) is not None:
                skipped.append(f"{spec.name}: {classifier.name}: {reason}")
                continue
            found = validate_classifier(spec, classifier, labelled, progress=ctx.progress)
            if not found:
                skipped.append(f"{spec.name}: no labelled messages in {labelled_path}")
            validations += found
        calls += sum((m.usage.since(b) for m, b in zip(meters, before, strict=True)), LLMCalls())
    report = ValidationReport(
        labelled=str(labelled_path), validations=validations,
        skipped=list(dict.fromkeys(skipped)), llm_calls=calls,
    )
    write_json(out / "judge.json", report)
    return report.written_to(out)
