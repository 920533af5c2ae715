"""What a steering classifier is asked: the values of a key and the prompts that offer them.

Kept apart from the classifiers so that every classifier, the validation on labelled messages
and the steering summary agree on one list of values per key (`options_of`: the key's values
without `any`, the unguided baseline, which is no style a message can show) and on one pair of
variants: without the config's `instruction_definitions` in the prompt, and with them (the
paper's Table 2 compares the two).

What a classifier reads values from is a config (`DomainSpec`) or a `LabelSpace`: the same
name, keys, values and definitions without a dialogue game around them (the Werewolf
playstyles a line may read as), so one classifier and one validation serve both.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gtsteer.binding import ANY, GENERIC, Domain, DomainSpec

PLAIN, DEFINED = "plain", "definitions"
VARIANTS = (PLAIN, DEFINED)


class LabelSpace(BaseModel):
    """The values a steering classifier chooses among where they are not a dialogue config's
    instructions (`eval judge werewolf_playstyle`: which playstyle a line reads as).

    It offers what the classifiers and the validation read of a `DomainSpec`: a `name` (the
    labelled set's entry), `actions` (key -> values; `any`, where present, is left out as
    always) and optional `instruction_definitions` (the `definitions` variant). It has no
    domain code, so no exact parser (`hooks` is the generic domain's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    actions: dict[str, list[str]] = Field(min_length=1)
    instruction_definitions: dict[str, dict[str, str]] = Field(default_factory=dict)

    @field_validator("actions")
    @classmethod
    def _two_values(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for key, values in v.items():
            real = [x for x in values if x != ANY]
            if len(real) < 2 or len(set(real)) != len(real):
                raise ValueError(f"`{key}`: need 2+ distinct values, got {values}")
        return v

    @property
    def hooks(self) -> Domain:
        return GENERIC


#: What a classifier reads the values of a key from.
Readable = DomainSpec | LabelSpace


def options_of(spec: Readable, key: str) -> list[str]:
    return [v for v in spec.actions[key] if v != ANY]


def classifier_prompt(
    spec: Readable, key: str, speaker: str, message: str, definitions: bool
) -> str:
    """Which value of `key` the message shows; the options are scored as its continuation."""
    options = options_of(spec, key)
    lines = [
        f'Message from {speaker}: "{message}"',
        "",
        f"Which {key} does this message show? The choices are: {', '.join(options)}.",
    ]
    if definitions:
        lines.append("What each choice means:")
        defs = spec.instruction_definitions[key]
        lines += [f"- {value}: {defs[value]}" for value in options]
    lines += ["Answer with one of the choices.", f"The {key} is:"]
    return "\n".join(lines)


def pairwise_prompt(
    spec: Readable, key: str, speaker: str, message: str, pair: tuple[str, str],
    definitions: bool,
) -> str:
    """Which of two values the message shows more; both options are scored as the answer."""
    a, b = pair
    lines = [f'Message from {speaker}: "{message}"', ""]
    if definitions:
        defs = spec.instruction_definitions[key]
        lines += [f"- {a}: {defs[a]}", f"- {b}: {defs[b]}"]
    lines += [f"Is the {key} of this message more {a} or more {b}?", "Answer:"]
    return "\n".join(lines)
