"""`gtsteer eval steering`: does the model say what its instruction asks it to say?

For every value of every action key, K messages are generated exactly as the game plays them at
its first decision: sample j is chance outcome j mod S of instance j div S (S: the first
message's `num_llm_seeds`), the root messages `gtsteer solve --games ceil(K/S)` expands, so the
two share cache entries. K unguided (`any`) messages give each value's base rate.

Each message is classified by a steering classifier (`gtsteer.evals.classifiers`) without and
with the config's `instruction_definitions` in the prompt (the paper's Table 2 compares the
two); accuracy per instruction comes with a 95% Wilson interval. Small models put most of
P(z | message) on one favourite label whatever the message (Gemma 3 270M answers "assertive"
for every message), so log-likelihood scores are calibrated by those of content-free messages
(`gtsteer.evals.calibration`); the uncalibrated predictions are kept in the report. The
statistics are `gtsteer.evals.steering`'s; this driver writes the messages, runs the
classification (both as units of work, serially or on Ray) and writes the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from gtsteer.binding import ANY, DialogueGame, DomainSpec, make_game, make_instance
from gtsteer.binding.progress import GatherBar
from gtsteer.domains import load_spec
from gtsteer.evals.classifiers import (
    MODEL_CLASSIFIERS,
    Classification,
    LoglikClassifier,
    PairwiseClassifier,
    SteeringClassifier,
    cannot_read,
    classifier_models,
    make_classifier,
    names_a_classifier,
)
from gtsteer.evals.prompts import DEFINED, PLAIN, VARIANTS, options_of
from gtsteer.evals.steering import ClassifierRun, Confusion, SteeringSample, summarise
from gtsteer.evals.validation import ClassifierValidation, JudgeRefused, passing_variants
from gtsteer.llm import LLM, LLMCalls
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.eval_judge import load_labelled, validate_classifier
from gtsteer.runs.executor import Executor
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import RunResult, check_out_dir, pyplot, save_png, write_json

SCHEMA_VERSION = 1
#: A message to generate: (instruction label, instance index, chance outcome).
Node = tuple[str, int, int]
#: Largest --samples accepted: each sample is one generation per instruction value.
MAX_SAMPLES = 1000


class SteeringReport(RunResult):
    """`DIR/steering.json`."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    classifier_model: str
    #: Which model played each role (writer, reader: the classifier) and where it came from.
    roles: dict[str, RoleRecord] = Field(default_factory=dict)
    samples_per_instruction: int
    seed: int
    speaker_role: str
    runs: list[ClassifierRun]
    #: Why a variant or key was not measured (e.g. no definitions in the config).
    skipped: list[str]
    samples: list[SteeringSample]
    llm_calls: LLMCalls
    #: How the classifier served structured output and `choose` (`LLM.capabilities`).
    llm_modes: dict[str, str | None] = Field(default_factory=dict)
    #: The classifier on the labelled messages (`--validate-judge`); empty when not validated.
    #: (`judge_validation`: the field's name in steering.json since schema 1.)
    judge_validation: list[ClassifierValidation] = Field(default_factory=list)

    def run(self, variant: str) -> ClassifierRun | None:
        return next((r for r in self.runs if r.variant == variant), None)


# ---- prompts --------------------------------------------------------------------------------


def instruction_label(spec: DomainSpec, key: str, value: str) -> str:
    """The game's action label with `key` set to `value` and every other key to `any`."""
    if len(spec.actions) == 1:
        return value
    return "|".join(f"{k}={value if k == key else ANY}" for k in spec.actions)


# ---- measurement ----------------------------------------------------------------------------


def _check(samples: int) -> None:
    if not 1 <= samples <= MAX_SAMPLES:
        raise ValueError(f"samples: must be between 1 and {MAX_SAMPLES}, got {samples}")


def _games(spec: DomainSpec, model: LLM, samples: int, seed: int, config: str
           ) -> dict[int, DialogueGame]:
    """The instances whose first decision the samples come from (no LLM call)."""
    return {index: make_game(spec, make_instance(spec, index, seed), model, config=config,
                             seed=seed)
            for index in range(-(-samples // spec.samples_at(0)))}


def _nodes(spec: DomainSpec, samples: int) -> list[Node]:
    """(label, instance, outcome) of every message: K per (key, value), K unguided."""
    labels = [instruction_label(spec, k, v) for k in spec.actions for v in options_of(spec, k)]
    # The unguided label is the same whatever the key: one message serves every key.
    labels.append(instruction_label(spec, spec.action_keys[0], ANY))
    return [(label, *divmod(j, spec.samples_at(0))) for label in labels for j in range(samples)]


def _samples(spec: DomainSpec, samples: int, games: dict[int, DialogueGame], speaker: int,
             text_of: dict[Node, str]) -> list[SteeringSample]:
    plan = [(k, v) for k in spec.actions for v in [*options_of(spec, k), ANY]]
    out = []
    for key, value in plan:
        label = instruction_label(spec, key, value)
        for j in range(samples):
            index, outcome = divmod(j, spec.samples_at(0))
            out.append(SteeringSample(
                key=key, instructed=value, instruction=label, instance=index, outcome=outcome,
                speaker=games[index].instance.names[speaker],
                message=text_of[(label, index, outcome)], predicted={}, predicted_uncalibrated={},
                scores={}, prior={},
            ))
    return out


def _groups(todo: list[tuple[SteeringSample, str]]
            ) -> list[tuple[str, str, list[SteeringSample]]]:
    """(key, variant, its samples): the batches a classifier classifies, in the serial order."""
    keys = list(dict.fromkeys((s.key, v) for s, v in todo))
    return [(key, variant, [s for s, v in todo if (s.key, v) == (key, variant)])
            for key, variant in keys]


def _record(variant: str, mine: list[SteeringSample], found: list[Classification]) -> None:
    for sample, classified in zip(mine, found, strict=True):
        sample.predicted[variant] = classified.predicted
        sample.predicted_uncalibrated[variant] = classified.predicted_uncalibrated
        sample.scores[variant] = classified.scores
        if classified.prior is not None:
            sample.prior[variant] = classified.prior


def _todo(spec: DomainSpec, out: list[SteeringSample], variants: tuple[str, ...]
          ) -> tuple[list[str], list[tuple[SteeringSample, str]]]:
    """What is classified under which variant, and why a key or variant is not."""
    skipped, todo = [], []
    for key in spec.actions:
        if len(options_of(spec, key)) < 2:  # one instruction: nothing to tell apart
            skipped.append(f"`{key}`: a single instruction besides `{ANY}`, nothing to classify")
            continue
        if PLAIN in variants:
            todo += [(s, PLAIN) for s in out if s.key == key]
        if DEFINED not in variants:
            continue
        missing = [v for v in options_of(spec, key)
                   if v not in spec.instruction_definitions.get(key, {})]
        if not missing:
            todo += [(s, DEFINED) for s in out if s.key == key]
        elif key not in spec.instruction_definitions:
            skipped.append(f"{DEFINED}: the config has no instruction_definitions for `{key}`")
        else:
            skipped.append(f"{DEFINED}: instruction_definitions.{key} lacks {missing}")
    return skipped, todo


# ---- units of work -------------------------------------------------------------------------
# Two stages: one unit per instance writes that instance's messages (no two instances share a
# prompt), then one unit per (key, variant) batch classifies them (each batch has its own
# prompts and content-free prior), so every unit is independent and counts the same serially
# (all gathered in one loop) and on Ray (one task each).


@dataclass(frozen=True)
class MessagesUnit:
    """One instance's messages."""

    spec: DomainSpec
    index: int
    seed: int
    config: str
    speaker: int
    nodes: list[Node]


async def instance_messages(unit: MessagesUnit, model: LLM, bar: GatherBar) -> list[str]:
    game = make_game(unit.spec, make_instance(unit.spec, unit.index, unit.seed), model,
                     config=unit.config, seed=unit.seed)

    async def message(label: str, _: int, outcome: int) -> str:
        action = game.instructions(unit.speaker).index(label)
        return await game.amessage((action, outcome), list(game.opening_turns), unit.speaker,
                                   label)

    return await bar.gather("messages", [message(*node) for node in unit.nodes])


#: One (key, variant) batch to classify: (spec, key, variant, [(speaker, message)]).
Batch = tuple[DomainSpec, str, str, list[tuple[str, str]]]


@dataclass(frozen=True)
class ClassifyUnit:
    """One batch for a classifier of `kind` (`MODEL_CLASSIFIERS`), rebuilt around the unit's
    model."""

    batch: Batch
    kind: type[LoglikClassifier | PairwiseClassifier]


async def classify_batch(unit: ClassifyUnit, model: LLM, bar: GatherBar) -> list[Classification]:
    spec, key, variant, items = unit.batch
    return await unit.kind(model).classify(spec, key, items, variant, bar)


def _measure(
    spec: DomainSpec, model: LLM, classifier: SteeringClassifier, samples: int, seed: int,
    config: str, variants: tuple[str, ...], executor: Executor,
) -> tuple[list[SteeringSample], list[str], int, dict[str, str | None]]:
    """K messages per (key, value) plus K unguided ones at the game's first decision, each
    classified under its variants; also the index of the player who speaks there and the
    classifier model's modes as its units found them ({}: a classifier without a model)."""
    games = _games(spec, model, samples, seed, config)
    speaker = games[0].first_player
    nodes = _nodes(spec, samples)
    by_index = {i: [n for n in nodes if n[1] == i] for i in games}
    written = executor.gather(instance_messages,
                              [MessagesUnit(spec, i, seed, config, speaker, mine)
                               for i, mine in by_index.items()],
                              model, label="instances")
    text_of = {n: t for i, texts in zip(by_index, written.values, strict=True)
               for n, t in zip(by_index[i], texts, strict=True)}
    out = _samples(spec, samples, games, speaker, text_of)
    skipped, todo = _todo(spec, out, variants)
    groups = _groups(todo)
    batches: list[Batch] = [(spec, key, variant, [(s.speaker, s.message) for s in mine])
                            for key, variant, mine in groups]
    kind = type(classifier)
    found: list[list[Classification]]
    if kind in MODEL_CLASSIFIERS and isinstance(classifier, MODEL_CLASSIFIERS):
        # (isinstance: for typing) rebuilt around the classifier's model wherever it runs
        classified = executor.gather(classify_batch, [ClassifyUnit(b, kind) for b in batches],
                                     classifier.llm, label="batches")
        found, modes = classified.values, classified.capabilities
    else:  # a classifier without a model (embeddings) classifies in this process
        async def here(batch: Batch, _: LLM, bar: GatherBar) -> list[Classification]:
            one_spec, key, variant, items = batch
            return await classifier.classify(one_spec, key, items, variant, bar)

        found = Executor(progress=executor.progress).gather(here, batches, model,
                                                            label="batches").values
        modes = {}
    for (_, variant, mine), classifications in zip(groups, found, strict=True):
        _record(variant, mine, classifications)
    return out, skipped, speaker, modes


class SteeringOptions(Options):
    """`gtsteer eval steering`'s options (the writer and the classifier, the reader role, come
    with the run context)."""

    #: Messages per instruction value (`--samples`).
    samples: int = 10
    seed: int = 0
    variants: tuple[str, ...] = VARIANTS
    #: Labelled messages to validate the classifier on first (`--validate-judge`).
    validate_classifier_on: str | Path | None = None


def measure(config: str | Path, ctx: RunContext, options: SteeringOptions) -> SteeringReport:
    """Generate, classify and summarise; nothing is written (see `run`).

    The reader (the classifier): a model string or LLM (calibrated log-likelihoods), a
    `SteeringClassifier`, or a classifier spelling (`embed`, `pairwise:<model>`, `parse`); not
    given: the config's `models.reader`, else the writer itself. With `validate_classifier_on`
    (`--validate-judge`) a variant whose accuracy on those labelled messages is not above
    chance is refused (listed in `skipped`); when none passes, or the classifier cannot read
    the domain at all (`parse` without a parser), JudgeRefused stops the run before any
    message is generated. A classifier without a model classifies in this process."""
    samples, seed, variants = options.samples, options.seed, options.variants
    _check(samples)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"variants: expected some of {', '.join(VARIANTS)}, got {variants!r}")
    spec = load_spec(config)  # ConfigError before any LLM call
    if all(len(options_of(spec, k)) < 2 for k in spec.actions):
        raise ValueError(f"actions: no key of `{spec.name}` has two instructions besides "
                         f"`{ANY}`, so there is nothing to classify")
    classifier_llm = ctx.given("reader")
    classifier: SteeringClassifier
    if classifier_llm is None or (
        isinstance(classifier_llm, (str, LLM)) and not names_a_classifier(classifier_llm)
    ):
        model, others, roles = ctx.roles(spec, "reader")
        classifier = LoglikClassifier(others["reader"])
    else:  # a classifier that is no model role (embed, pairwise:MODEL, parse, an object)
        model, _, roles = ctx.roles(spec)
        classifier = make_classifier(classifier_llm)
        roles["reader"] = RoleRecord(model=classifier.name, source="given")
        if (reason := cannot_read(classifier, spec)) is not None:
            raise JudgeRefused(f"--classifier-llm {classifier.name}: {reason}")
    meters = list(dict.fromkeys([model, *classifier_models(classifier)]))
    before = [m.usage for m in meters]
    validations: list[ClassifierValidation] = []
    refused: list[str] = []
    if options.validate_classifier_on is not None:  # JudgeRefused when no variant passes
        validations = validate_classifier(spec, classifier,
                                          load_labelled(options.validate_classifier_on),
                                          variants, progress=ctx.progress)
        variants, refused = passing_variants(validations, variants, spec.name)
    with ctx.executor.session():
        out, skipped, speaker, modes = _measure(
            spec, model, classifier, samples, seed, str(config), variants, ctx.executor)
    after = [m.usage for m in meters]
    runs = [summarise(spec, out, v) for v in VARIANTS if any(v in s.predicted for s in out)]
    return SteeringReport(
        config=str(config),
        domain=spec.name,
        model=model.model,
        classifier_model=classifier.name,
        roles=roles,
        samples_per_instruction=samples,
        seed=seed,
        speaker_role=spec.players[speaker],
        runs=runs,
        skipped=refused + skipped,
        samples=out,
        llm_calls=sum((a.since(b) for a, b in zip(after, before, strict=True)), LLMCalls()),
        llm_modes=modes,
        judge_validation=validations,
    )


# ---- files ----------------------------------------------------------------------------------


def confusion_figure(confusion: Confusion, title: str):  # -> matplotlib Figure
    """Row-normalised heat map with the counts written in each cell."""
    plt = pyplot()

    counts = np.asarray(confusion.counts, dtype=float)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    fig, ax = plt.subplots(
        figsize=(1.1 * len(confusion.columns) + 2.5, 0.6 * len(confusion.rows) + 2)
    )
    ax.imshow(share, cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(confusion.columns)), confusion.columns, rotation=30, ha="right")
    ax.set_yticks(range(len(confusion.rows)), [*confusion.rows[:-1], f"{ANY} (unguided)"])
    ax.set_xlabel(f"classified {confusion.of}")
    ax.set_ylabel(f"instructed {confusion.of}")
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            ax.text(j, i, str(int(counts[i, j])), ha="center", va="center",
                    color="white" if share[i, j] > 0.6 else "black")
    ax.set_title(title)
    return fig


@driver("eval steering")
def run(config: str | Path, ctx: RunContext, options: SteeringOptions) -> SteeringReport:
    """`gtsteer eval steering`: measure, then write DIR/steering.json and one confusion PNG per
    (variant, key)."""
    _check(options.samples)
    out = check_out_dir(ctx.folder("eval-steering", config, ctx.writer_name(load_spec(config)),
                                   options.seed))
    report = measure(config, ctx, options)
    for variant in report.runs:
        for confusion in variant.confusion:
            key = re.sub(r'[^A-Za-z0-9_-]+', '_', confusion.of)
            file = f"confusion-{variant.variant}-{key}.png"
            how = "with definitions" if variant.variant == DEFINED else "without definitions"
            title = f"{report.domain} · {report.model} · classifier {how}"
            save_png(confusion_figure(confusion, title), out / file)
            variant.png.append(file)
    write_json(out / "steering.json", report)
    return report.written_to(out)
