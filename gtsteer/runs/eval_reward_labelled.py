"""`gtsteer eval reward CONFIG --labelled FILE`: does each reading find what hand-labelled
dialogues agreed? (The FILE format and the results: docs/EVAL.md, "Hand-labelled dialogues".)

The templated cases of `eval_reward` are written by the same code whose wording the exact
readers know; a person's dialogues are the test a reader has not seen. Every reading the domain
has (`AgreementReading.readers`) is scored, the configured one first: per item, what it read
and whether that is the label; per reading, the share right with a 95% Wilson interval over
all items and by label kind. A reading whose model call failed counts as wrong (`failures`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from gtsteer.binding import DomainSpec, Instance, RewardContext, make_instance
from gtsteer.binding.domain import AgreementReading
from gtsteer.binding.instances import name_fields
from gtsteer.binding.progress import GatherBar
from gtsteer.binding.prompts import Turn, fill_template, render_transcript
from gtsteer.binding.reward_cases import reward_cases_for
from gtsteer.binding.spec import validation_summary
from gtsteer.domains import load_spec
from gtsteer.evals.reward import Over, ReadingAccuracy, reading_accuracy
from gtsteer.llm import LLM, LLMCalls, LLMError
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.output import RunResult, check_out_dir, write_json

SCHEMA_VERSION = 1
Kind = Literal["agreed", "none"]
AGREED: Kind = "agreed"
NONE: Kind = "none"
#: The rows of each reading's accuracy: every item, then each label kind.
OVER: tuple[Over, ...] = ("all", AGREED, NONE)
#: The report's file in the run folder.
FILE = "reward_labelled.json"


class LabelledDialogue(BaseModel):
    """One hand-labelled dialogue; `agreed` is required (null: nothing agreed)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    names: list[str]
    transcript: list[str]
    agreed: Any

    @model_validator(mode="before")
    @classmethod
    def _first_second(cls, data: Any) -> Any:
        """`first:`/`second:` (the two speakers in order) spell `names:` too."""
        if isinstance(data, dict) and "names" not in data and {"first", "second"} <= set(data):
            data = {**data, "names": [data["first"], data["second"]]}
        return data

    @field_validator("names")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        if len(v) < 2 or len(set(v)) != len(v) or not all(n.strip() for n in v):
            raise ValueError(f"needs two or more distinct names, got {v}")
        return v

    @field_validator("transcript")
    @classmethod
    def _transcript(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("needs at least one message")
        return v

    def turns(self) -> list[Turn]:
        """The messages as turns: alternating from the first name, unless a message opens with
        one of the names and a colon."""
        tag = re.compile(r"^\s*(" + "|".join(map(re.escape, self.names)) + r")\s*:\s*")
        out: list[Turn] = []
        for text in self.transcript:
            m = tag.match(text)
            if m is not None:
                speaker, text = self.names.index(m.group(1)), text[m.end():]
            else:
                speaker = 0 if not out else (out[-1].speaker + 1) % len(self.names)
            out.append(Turn(speaker=speaker, instruction=None, text=text.strip()))
        return out


def load_labelled_dialogues(path: str | Path) -> list[LabelledDialogue]:
    """The items of a labelled file; a ValueError names the file, the item and the field."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--labelled: no file {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"--labelled {path}: not YAML: {exc}") from None
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    if not isinstance(data, list) or not data:
        raise ValueError(f"--labelled {path}: expected a list of items {{names, transcript, "
                         "agreed}} (or a mapping with that list under `items`)")
    items = []
    for i, raw in enumerate(data):
        try:
            items.append(LabelledDialogue.model_validate(raw))
        except ValidationError as exc:
            raise ValueError(f"--labelled {path}: item {i}: {validation_summary(exc)}") from None
    return items


class LabelledRead(BaseModel):
    """What each reading found in one labelled dialogue."""

    index: int
    names: list[str]
    transcript: str
    kind: Kind
    #: The label as the domain words it ("none" for nothing agreed).
    label: str
    #: Reading -> what it read ("none": nothing agreed; None: the reading failed).
    read: dict[str, str | None]
    correct: dict[str, bool]
    failures: dict[str, str]


class LabelledReport(RunResult):
    """`DIR/reward_labelled.json`."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    labelled: str
    seed: int
    #: The reading the config pays by (the first of `paths`).
    configured: str
    paths: list[str]
    accuracy: list[ReadingAccuracy]
    items: list[LabelledRead]
    llm_calls: LLMCalls

    def accuracy_of(self, path: str, kind: str = "all") -> ReadingAccuracy:
        return next(a for a in self.accuracy if a.path == path and a.kind == kind)


def agreement_reading(spec: DomainSpec) -> AgreementReading:
    """The domain's reading of what was agreed; a clear error for a domain without one."""
    reading = reward_cases_for(spec).agreement
    if reading is None:
        raise ValueError(f"--labelled: domain `{spec.hooks.name}` cannot say what a dialogue "
                         "agreed (RewardCases.agreement), so labelled dialogues cannot be "
                         "scored; today only fruit by offer (trade_fruit_offer) can")
    return reading


@dataclass(frozen=True)
class LabelledUnit:
    """One labelled item, ready to read: the unit of work (a Ray task with `--ray`)."""

    spec: DomainSpec
    index: int
    instance: Instance
    turns: list[Turn]
    kind: Kind
    truth: Any


def units_of(spec: DomainSpec, items: list[LabelledDialogue], seed: int) -> list[LabelledUnit]:
    """Each item on an instance of the config (its generated private information, which the
    readings do not use, under the item's names); labels checked before any model call."""
    reading = agreement_reading(spec)
    out = []
    for i, item in enumerate(items):
        if len(item.names) != spec.num_players:
            raise ValueError(f"--labelled: item {i}: field `names`: {spec.name} has "
                             f"{spec.num_players} players, got {item.names}")
        turns = item.turns()
        try:
            truth = (None if item.agreed is None
                     else reading.label(spec, item.agreed, turns[0].speaker))
        except ValueError as exc:
            raise ValueError(f"--labelled: item {i}: field `agreed`: {exc}") from None
        base = make_instance(spec, i, seed)
        instance = base.model_copy(update={
            "names": list(item.names),
            "scenario": fill_template(spec.scenario, name_fields(item.names)).strip()})
        out.append(LabelledUnit(spec, i, instance, turns, NONE if truth is None else AGREED,
                                truth))
    return out


async def read_unit(unit: LabelledUnit, model: LLM, bar: GatherBar) -> LabelledRead:
    """Every reading of one item."""
    reading = agreement_reading(unit.spec)
    readers = reading.readers(unit.spec)
    ctx = RewardContext(spec=unit.spec, instance=unit.instance, transcript=unit.turns, llm=model)

    async def one(name: str) -> tuple[Any, str | None]:
        try:
            return await readers[name](ctx), None
        except LLMError as exc:
            return None, f"{type(exc).__name__}: {exc}"

    results = await bar.gather("labelled dialogues", [one(name) for name in readers])
    names = unit.instance.names

    def shown(outcome: Any) -> str:
        return NONE if outcome is None else reading.describe(names, outcome)

    read: dict[str, str | None] = {}
    correct: dict[str, bool] = {}
    failures: dict[str, str] = {}
    for name, (outcome, why) in zip(readers, results, strict=True):
        read[name] = None if why is not None else shown(outcome)
        correct[name] = why is None and outcome == unit.truth
        if why is not None:
            failures[name] = why
    return LabelledRead(index=unit.index, names=names,
                        transcript=render_transcript(unit.turns, names), kind=unit.kind,
                        label=shown(unit.truth), read=read, correct=correct, failures=failures)


class LabelledOptions(Options):
    """`gtsteer eval reward --labelled FILE`'s options (the model comes with the run context)."""

    #: The hand-labelled dialogues (`--labelled`).
    labelled: str | Path
    seed: int = 0


def measure(config: str | Path, ctx: RunContext, options: LabelledOptions) -> LabelledReport:
    """Read every labelled item by every reading of the config's domain; nothing written."""
    labelled, seed = options.labelled, options.seed
    spec = load_spec(config)
    items = load_labelled_dialogues(labelled)
    units = units_of(spec, items, seed)
    paths = list(agreement_reading(spec).readers(spec))
    model, _, _ = ctx.roles(spec)
    before = model.usage
    with ctx.executor.session():
        scored = ctx.executor.gather(read_unit, units, model, label="labelled dialogues").values
    after = model.usage
    accuracy = [reading_accuracy(path, kind, scored)
                for path in paths for kind in OVER]
    return LabelledReport(
        config=str(config), domain=spec.name, model=model.model, labelled=str(labelled),
        seed=seed, configured=paths[0], paths=paths, accuracy=accuracy, items=scored,
        llm_calls=after.since(before),
    )


@driver("eval reward --labelled")
def run(config: str | Path, ctx: RunContext, options: LabelledOptions) -> LabelledReport:
    """`gtsteer eval reward CONFIG --labelled FILE`: measure, then write DIR/reward_labelled.json
    (the folder of `eval reward` on generated cases, beside its reward.json)."""
    out = check_out_dir(ctx.folder("eval-reward", config, ctx.writer_name(load_spec(config)),
                                   options.seed))
    report = measure(config, ctx, options)
    write_json(out / FILE, report)
    return report.written_to(out)
