"""`gtsteer eval judge`: can a steering classifier tell apart messages whose label is known?

The driver of `gtsteer.evals.validation` (the classifiers, the accuracies and the refusal
rule live there): it reads the labelled messages (tests/data/judge_labelled.yaml by default),
validates every classifier given with `--judge` on every config, per variant (without / with
the config's instruction definitions), and writes DIR/judge.json. `gtsteer eval steering
--validate-judge FILE` and gtsteer study steering-table validate the same way before they measure.
The command keeps its name, `judge`, and so do its option and file; in the code the thing
validated is a steering classifier, since "judge" is the verdict game's.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError

from gtsteer.binding import DomainSpec
from gtsteer.binding.progress import GatherBar
from gtsteer.domains import load_spec
from gtsteer.evals.classifiers import SteeringClassifier, classifier_models, make_classifier
from gtsteer.evals.prompts import VARIANTS
from gtsteer.evals.validation import (
    ClassifierValidation,
    LabelledSet,
    labelled_for,
    validate_on_labelled,
)
from gtsteer.llm import LLMCalls, run_sync
from gtsteer.runs.output import check_out_dir, write_json

SCHEMA_VERSION = 1
#: The labelled set shipped with the repository.
DEFAULT_LABELLED = Path(__file__).resolve().parents[2] / "tests" / "data" / "judge_labelled.yaml"


class ValidationReport(BaseModel):
    """`DIR/judge.json`."""

    schema_version: int = SCHEMA_VERSION
    labelled: str
    validations: list[ClassifierValidation]
    skipped: list[str] = Field(default_factory=list)
    llm_calls: LLMCalls


def load_labelled(path: str | Path = DEFAULT_LABELLED) -> LabelledSet:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"labelled messages: no file {path}")
    try:
        return LabelledSet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"labelled messages {path}: {exc}") from None


def validate_classifier(
    spec: DomainSpec, classifier: SteeringClassifier, labelled: LabelledSet,
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


def run_classifier_validation(
    configs: list[str | Path],
    classifiers: list[str],
    labelled_path: str | Path = DEFAULT_LABELLED,
    out_dir: str | Path | None = None,
    *,
    progress: bool = True,
) -> tuple[ValidationReport, Path]:
    """Validate every classifier (its spelling: a model, pairwise:<model>, embed) on every
    config's labelled messages; write DIR/judge.json."""
    if not classifiers:
        # "judges": what the command line calls them (`gtsteer eval judge --judge`)
        raise ValueError("judges: give at least one (a model string, pairwise:<model>, embed)")
    specs = [load_spec(c) for c in configs]  # ConfigError before any model is loaded
    labelled = load_labelled(labelled_path)
    out = check_out_dir(Path(out_dir) if out_dir is not None else Path("results") / "eval-judge")
    validations: list[ClassifierValidation] = []
    skipped: list[str] = []
    calls = LLMCalls()
    for name in classifiers:
        classifier = make_classifier(name)
        meters = classifier_models(classifier)
        before = [m.usage for m in meters]
        for spec in specs:
            found = validate_classifier(spec, classifier, labelled, progress=progress)
            if not found:
                skipped.append(f"{spec.name}: no labelled messages in {labelled_path}")
            validations += found
        calls += sum((m.usage.since(b) for m, b in zip(meters, before, strict=True)), LLMCalls())
    report = ValidationReport(
        labelled=str(labelled_path), validations=validations,
        skipped=list(dict.fromkeys(skipped)), llm_calls=calls,
    )
    write_json(out / "judge.json", report)
    return report, out
