"""A steering classifier on messages whose label is known, and the rule that refuses it.

A steering accuracy is only evidence when the classifier that produced it can read the
difference between instructions at all. Hand-written messages with an unambiguous tone,
style, focus or day (gtsteer/data/judge_labelled.yaml: written for the check, not produced by any
model under test) are classified per config and variant, and the accuracy comes with a 95%
Wilson interval against chance (one over the number of values).

The rule (`ClassifierValidation.passes`): a classifier is fit for a steering table only where
the lower end of its interval lies above chance; `require_passing` and `passing_variants`
refuse the rest, because their accuracies would be numbers from a classifier that has not been
shown to read what it is asked to read. Reading the labelled file and writing reports is the
drivers' (`gtsteer.runs.eval_judge`, `gtsteer.runs.eval_steering`).
"""

from __future__ import annotations

from pydantic import BaseModel, field_validator

from gtsteer.binding.progress import GatherBar
from gtsteer.evals.classifiers import SteeringClassifier
from gtsteer.evals.prompts import DEFINED, Readable, options_of
from gtsteer.solvers.metrics import Proportion, wilson


class JudgeRefused(ValueError):
    """A steering classifier failed validation on the labelled messages; the message says where
    and how.

    Named for the command line it answers (`--validate-judge`, `gtsteer eval judge`): the CLI
    prints the type's name in its one error line (`error: JudgeRefused: ...`), so the name is
    output and stays."""


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


def labelled_for(spec: Readable, labelled: LabelledSet) -> LabelledConfig | None:
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
    accuracy: Proportion


class ClassifierValidation(BaseModel):
    """One steering classifier on one (config, key, variant) of the labelled set."""

    #: The classifier's name (`SteeringClassifier.name`); `judge` in judge.json and
    #: steering.json, the word of `gtsteer eval judge --judge`.
    judge: str
    config: str  # the spec's name
    key: str
    variant: str
    accuracy: Proportion
    chance: float
    #: The rule: the Wilson interval's lower end lies above chance.
    passes: bool
    per_value: list[ValueAccuracy]
    #: counts[i][j]: messages labelled values[i] classified values[j]
    values: list[str]
    counts: list[list[int]]

    def describe(self) -> str:
        a = self.accuracy
        return (f"judge {self.judge} on {self.config}.{self.key} ({self.variant}): "
                f"{a.correct}/{a.n} = {a.accuracy:.0%} [95% {a.ci_low:.0%}, {a.ci_high:.0%}] "
                f"vs chance {self.chance:.0%}")


async def validate_on_labelled(
    spec: Readable, classifier: SteeringClassifier, entry: LabelledConfig,
    variants: tuple[str, ...], bar: GatherBar,
) -> list[ClassifierValidation]:
    """The classifier's accuracy on each labelled key of the config, per variant (a variant
    the config cannot offer, definitions it lacks, is left out)."""
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
            classified = await classifier.classify(spec, key, items, variant, bar)
            got = [c.predicted for c in classified]
            per_value, counts = [], []
            for v in options:
                mine = [g for g, t in zip(got, truth, strict=True) if t == v]
                per_value.append(ValueAccuracy(value=v, accuracy=wilson(mine.count(v), len(mine))))
                counts.append([mine.count(o) for o in options])
            correct = sum(g == t for g, t in zip(got, truth, strict=True))
            accuracy, chance = wilson(correct, len(truth)), 1 / len(options)
            out.append(ClassifierValidation(
                judge=classifier.name, config=spec.name, key=key, variant=variant,
                accuracy=accuracy, chance=chance, passes=accuracy.ci_low > chance,
                per_value=per_value, values=options, counts=counts,
            ))
    return out


def require_passing(validations: list[ClassifierValidation], what: str) -> None:
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


def passing_variants(
    validations: list[ClassifierValidation], variants: tuple[str, ...], config: str
) -> tuple[tuple[str, ...], list[str]]:
    """The variants whose every validation passes, and why each other one is refused;
    JudgeRefused when there is no validation at all, or no variant passes."""
    if not validations:
        require_passing([], config)  # raises: nothing to validate the classifier on
    kept, notes = [], []
    for variant in variants:
        mine = [x for x in validations if x.variant == variant]
        try:
            require_passing(mine, f"{config} ({variant})")
        except JudgeRefused as exc:
            notes.append(str(exc))
            continue
        kept.append(variant)
    if not kept:
        raise JudgeRefused(" | ".join(notes))
    return tuple(kept), notes
