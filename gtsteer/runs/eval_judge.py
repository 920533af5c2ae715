"""`gtsteer eval judge`: can a steering judge tell apart messages whose label is known?

A steering accuracy is only evidence when the judge that produced it can read the difference
between instructions at all. Here each judge classifies hand-written messages with an
unambiguous tone, style, focus or day (tests/data/judge_labelled.yaml: written for the check,
not produced by any model under test), per config and classifier variant (without / with the
config's instruction definitions), and reports its accuracy with a 95% Wilson interval against
chance (one over the number of values).

The rule (`passes`): a judge is fit for a steering table only where the lower end of its
interval lies above chance. `gtsteer eval steering --validate-judge FILE` and
scripts/steering_table.py refuse a (judge, config, variant) that fails it: its accuracies would
be numbers from a judge that has not been shown to read what it is asked to read.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator

from gtsteer.binding import DomainSpec
from gtsteer.binding.progress import GatherBar
from gtsteer.domains import load_spec
from gtsteer.llm import LLMCalls, run_sync
from gtsteer.runs.output import check_out_dir, write_json
from gtsteer.runs.steering_judges import (
    DEFINED,
    VARIANTS,
    Judge,
    judge_models,
    make_judge,
    options_of,
)
from gtsteer.solvers.metrics import Accuracy, wilson

SCHEMA_VERSION = 1
#: The labelled set shipped with the repository.
DEFAULT_LABELLED = Path(__file__).resolve().parents[2] / "tests" / "data" / "judge_labelled.yaml"


class JudgeRefused(ValueError):
    """A judge failed validation on the labelled messages; the message says where and how."""


class LabelledConfig(BaseModel):
    speaker: str
    #: action key -> value -> messages showing that value
    labels: dict[str, dict[str, list[str]]]

    @field_validator("labels")
    @classmethod
    def _non_empty(cls, labels: dict[str, dict[str, list[str]]]):
        for key, values in labels.items():
            for value, messages in values.items():
                if not messages:
                    raise ValueError(f"{key}.{value}: no messages")
        return labels


class LabelledSet(BaseModel):
    schema_version: int = 1
    configs: dict[str, LabelledConfig]


def load_labelled(path: str | Path = DEFAULT_LABELLED) -> LabelledSet:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"labelled messages: no file {path}")
    try:
        return LabelledSet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"labelled messages {path}: {exc}") from None


def labelled_for(spec: DomainSpec, labelled: LabelledSet) -> LabelledConfig | None:
    """The config's labelled messages (None: the set has none for it), checked to cover
    exactly the values of each key it labels."""
    entry = labelled.configs.get(spec.name)
    if entry is None:
        return None
    for key, values in entry.labels.items():
        if key not in spec.actions:
            raise ValueError(f"labelled messages: `{spec.name}` has no action key `{key}`")
        wanted = options_of(spec, key)
        if sorted(values) != sorted(wanted):
            raise ValueError(
                f"labelled messages for {spec.name}.{key}: values {sorted(values)} do not match "
                f"the config's {sorted(wanted)}"
            )
    return entry


class ValueAccuracy(BaseModel):
    value: str
    accuracy: Accuracy


class JudgeValidation(BaseModel):
    """One judge on one (config, key, variant) of the labelled set."""

    judge: str
    config: str  # the spec's name
    key: str
    variant: str
    accuracy: Accuracy
    chance: float
    #: The rule: the Wilson interval's lower end lies above chance.
    passes: bool
    per_value: list[ValueAccuracy]
    #: counts[i][j]: messages labelled values[i] judged values[j]
    values: list[str]
    counts: list[list[int]]

    def describe(self) -> str:
        a = self.accuracy
        return (f"judge {self.judge} on {self.config}.{self.key} ({self.variant}): "
                f"{a.correct}/{a.n} = {a.accuracy:.0%} [95% {a.ci_low:.0%}, {a.ci_high:.0%}] "
                f"vs chance {self.chance:.0%}")


class JudgeReport(BaseModel):
    """`DIR/judge.json`."""

    schema_version: int = SCHEMA_VERSION
    labelled: str
    validations: list[JudgeValidation]
    skipped: list[str] = Field(default_factory=list)
    llm_calls: LLMCalls


async def validate_async(
    spec: DomainSpec, judge: Judge, entry: LabelledConfig, variants: tuple[str, ...],
    bar: GatherBar,
) -> list[JudgeValidation]:
    out = []
    for key, values in entry.labels.items():
        options = options_of(spec, key)
        items = [(entry.speaker, m) for v in options for m in values[v]]
        truth = [v for v in options for _ in values[v]]
        for variant in variants:
            if variant == DEFINED and any(
                v not in spec.instruction_definitions.get(key, {}) for v in options
            ):
                continue
            judged = await judge.judge(spec, key, items, variant, bar)
            got = [j.predicted for j in judged]
            per_value, counts = [], []
            for v in options:
                mine = [g for g, t in zip(got, truth, strict=True) if t == v]
                per_value.append(ValueAccuracy(value=v, accuracy=wilson(mine.count(v), len(mine))))
                counts.append([mine.count(o) for o in options])
            correct = sum(g == t for g, t in zip(got, truth, strict=True))
            accuracy, chance = wilson(correct, len(truth)), 1 / len(options)
            out.append(JudgeValidation(
                judge=judge.name, config=spec.name, key=key, variant=variant,
                accuracy=accuracy, chance=chance, passes=accuracy.ci_low > chance,
                per_value=per_value, values=options, counts=counts,
            ))
    return out


def validate_judge(
    spec: DomainSpec, judge: Judge, labelled: LabelledSet, variants: tuple[str, ...] = VARIANTS,
    *, progress: bool = False,
) -> list[JudgeValidation]:
    """The judge's accuracy on the config's labelled messages; [] where the set has none."""
    entry = labelled_for(spec, labelled)
    if entry is None:
        return []

    async def go() -> list[JudgeValidation]:
        with GatherBar(progress) as bar:
            return await validate_async(spec, judge, entry, variants, bar)

    return run_sync(go())


def require_passing(validations: list[JudgeValidation], what: str) -> None:
    """JudgeRefused unless at least one validation exists and every one passes."""
    if not validations:
        raise JudgeRefused(f"{what}: the labelled set has no messages for it, so the judge "
                           "cannot be validated")
    failed = [v for v in validations if not v.passes]
    if failed:
        raise JudgeRefused(
            f"{what}: refused, the judge is not better than chance on the labelled messages: "
            + "; ".join(v.describe() for v in failed)
            + ". Use a judge that passes `gtsteer eval judge` there."
        )


def run_judges(
    configs: list[str | Path],
    judges: list[str],
    labelled_path: str | Path = DEFAULT_LABELLED,
    out_dir: str | Path | None = None,
    *,
    progress: bool = True,
) -> tuple[JudgeReport, Path]:
    """Validate every judge on every config's labelled messages; write DIR/judge.json."""
    if not judges:
        raise ValueError("judges: give at least one (a model string, pairwise:<model>, embed)")
    specs = [load_spec(c) for c in configs]  # ConfigError before any model is loaded
    labelled = load_labelled(labelled_path)
    out = check_out_dir(Path(out_dir) if out_dir is not None else Path("results") / "eval-judge")
    validations: list[JudgeValidation] = []
    skipped: list[str] = []
    calls = LLMCalls()
    for name in judges:
        judge = make_judge(name)
        meters = judge_models(judge)
        before = [m.usage for m in meters]
        for spec in specs:
            found = validate_judge(spec, judge, labelled, progress=progress)
            if not found:
                skipped.append(f"{spec.name}: no labelled messages in {labelled_path}")
            validations += found
        calls += sum((m.usage.since(b) for m, b in zip(meters, before, strict=True)), LLMCalls())
    report = JudgeReport(
        labelled=str(labelled_path), validations=validations,
        skipped=list(dict.fromkeys(skipped)), llm_calls=calls,
    )
    write_json(out / "judge.json", report)
    return report, out
