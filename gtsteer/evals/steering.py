"""The summary of classified steering messages: does the model say what it is told to?

Given every message with its instructed value and the steering classifier's prediction per
variant, this is where the numbers of `gtsteer eval steering` come from: accuracy per
instruction with a 95% Wilson interval, the **base rate** (how often an unguided message is
classified as that value: steering has to beat that, not only chance), a classifier-free check
(how often the message names the value as a word), chance, and one confusion matrix per key.
Calibrated and raw predictions are summarised alike, so a report shows what calibration did.
How the messages were written and classified, and where the report goes, is the driver's
(`gtsteer.runs.eval_steering`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import BaseModel

from gtsteer.binding import ANY, DomainSpec
from gtsteer.evals.prompts import options_of
from gtsteer.solvers.metrics import Proportion, Spelling, wilson


class InstructionRow(BaseModel):
    key: str
    value: str
    accuracy: Proportion
    #: Fraction of unguided (`any`) messages classified as this value: what steering must beat.
    base_rate: float
    #: Classifier-free check: share of the instructed messages that name the value as a word
    #: ("Tuesday"), and of the unguided messages that do.
    mention_rate: float
    mention_base_rate: float


class Confusion(BaseModel):
    """counts[i][j]: items of `rows[i]` read as `columns[j]`; `of` names the matrix (steering:
    the action key, its last row the unguided messages; Werewolf styles: the judge variant)."""

    of: str
    rows: list[str]
    columns: list[str]
    counts: list[list[int]]


class ClassifierRun(BaseModel):
    variant: str  # "plain" (no definitions) or "definitions"
    keys: list[str]  # action keys this run classified
    per_instruction: list[InstructionRow]
    aggregate: Proportion  # over every instructed (non-`any`) message of `keys`
    #: True when predictions subtract the content-free prior (log-likelihood classifiers).
    calibrated: bool
    #: The aggregate of the raw argmax (no calibration), for comparison.
    aggregate_uncalibrated: Proportion
    chance: float  # accuracy of a uniform guess, averaged over the instructed messages
    confusion: list[Annotated[Confusion, Spelling(of="key")]]
    png: list[str]  # confusion-matrix images, relative to the report's folder


class SteeringSample(BaseModel):
    key: str
    instructed: str  # a value of `key`, or "any"
    instruction: str  # the game's action label
    instance: int
    outcome: int
    speaker: str
    message: str
    predicted: dict[str, str]  # variant -> predicted value (calibrated where possible)
    predicted_uncalibrated: dict[str, str]  # variant -> raw argmax
    scores: dict[str, dict[str, float]]  # variant -> option -> raw classifier score
    #: variant -> option -> mean score of the content-free messages (absent: not calibrated)
    prior: dict[str, dict[str, float]]


def mention_rate(value: str, samples: list[SteeringSample]) -> float:
    """Share of the samples whose message names `value` as a word (any case)."""
    word = re.compile(rf"\b{re.escape(value)}\b", re.IGNORECASE)
    return sum(bool(word.search(s.message)) for s in samples) / max(1, len(samples))


def summarise(spec: DomainSpec, samples: list[SteeringSample], variant: str) -> ClassifierRun:
    """Accuracy per instruction, aggregate, chance and confusion of one classifier variant."""
    run = _summarise(spec, samples, variant, lambda s: s.predicted)
    raw = _summarise(spec, samples, variant, lambda s: s.predicted_uncalibrated)
    calibrated = any(variant in s.prior for s in samples)
    return run.model_copy(
        update={"calibrated": calibrated, "aggregate_uncalibrated": raw.aggregate}
    )


def _summarise(
    spec: DomainSpec,
    samples: list[SteeringSample],
    variant: str,
    field: Callable[[SteeringSample], dict[str, str]],
) -> ClassifierRun:
    keys = list(dict.fromkeys(s.key for s in samples if variant in s.predicted))
    rows, confusions = [], []
    correct = total = 0
    chance = 0.0
    for key in keys:
        options = options_of(spec, key)
        mine = [s for s in samples if s.key == key and variant in s.predicted]
        unguided = [s for s in mine if s.instructed == ANY]
        # A prediction outside the options (an exact parse that read none) gets a column of its
        # own, so every row of the matrix adds up to its samples.
        outside = [p for p in dict.fromkeys(field(s)[variant] for s in mine) if p not in options]
        columns = [*options, *outside]
        counts = []
        for value in [*options, ANY]:
            got = [field(s)[variant] for s in mine if s.instructed == value]
            counts.append([got.count(o) for o in columns])
            if value == ANY:
                continue
            hits = got.count(value)
            correct, total = correct + hits, total + len(got)
            chance += len(got) / len(options)
            base = sum(field(s)[variant] == value for s in unguided) / max(1, len(unguided))
            rows.append(InstructionRow(
                key=key, value=value, accuracy=wilson(hits, len(got)), base_rate=base,
                mention_rate=mention_rate(value, [s for s in mine if s.instructed == value]),
                mention_base_rate=mention_rate(value, unguided),
            ))
        confusions.append(
            Confusion(of=key, rows=[*options, ANY], columns=columns, counts=counts)
        )
    return ClassifierRun(
        variant=variant, keys=keys, per_instruction=rows, aggregate=wilson(correct, total),
        calibrated=False, aggregate_uncalibrated=wilson(correct, total),
        chance=chance / total, confusion=confusions, png=[],
    )
