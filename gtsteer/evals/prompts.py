"""What a steering classifier is asked: the values of a key and the prompts that offer them.

Kept apart from the classifiers so that every classifier, the validation on labelled messages
and the steering summary agree on one list of values per key (`options_of`: the key's values
without `any`, the unguided baseline, which is no style a message can show) and on one pair of
variants: without the config's `instruction_definitions` in the prompt, and with them (the
paper's Table 2 compares the two).
"""

from __future__ import annotations

from gtsteer.binding import ANY, DomainSpec

PLAIN, DEFINED = "plain", "definitions"
VARIANTS = (PLAIN, DEFINED)


def options_of(spec: DomainSpec, key: str) -> list[str]:
    return [v for v in spec.actions[key] if v != ANY]


def classifier_prompt(
    spec: DomainSpec, key: str, speaker: str, message: str, definitions: bool
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
    spec: DomainSpec, key: str, speaker: str, message: str, pair: tuple[str, str],
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
