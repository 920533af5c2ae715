"""Proposer prompts of the approximate best-response operators (arXiv 2402.01704, App. D).

Completion-friendly plain text (a base model continues after "Answer:"; chat models read it
as the user turn). Numbers are printed with fixed precision so the same state always yields
the same prompt, hence the same cache key on a rerun.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from gtsteer.binding import DomainSpec
from gtsteer.binding.prompts import DEFAULT_INSTRUCTION, fill_template


class ProposalList(BaseModel):
    """What the proposer must answer: a JSON object with one list of short strings."""

    instructions: list[str] = Field(description="new values, each one to three words")


@dataclass(frozen=True)
class SampledDialogue:
    instruction: str
    payoff: float
    transcript: str


def _frame(spec: DomainSpec, key: str, role: str) -> list[str]:
    template = spec.instruction_templates.get(key, DEFAULT_INSTRUCTION)
    shown = fill_template(template, {"name": "the speaker", "key": key, "value": "<VALUE>"})
    about = spec.description or spec.name
    return [
        f"Game: {about}",
        (f"Players: {', '.join(spec.players)}. Before each of its messages the {role} is given "
         f"one {key}, shown to it as: {shown.strip()}"),
    ]


#: Few-shot answer examples. Small base models copy the example they are shown, so each call
#: shows two values drawn (by the call's seed) from this pool: a copying model still explores,
#: and a capable one just learns the format.
EXAMPLE_POOL = (
    "playful", "formal and brief", "warm", "skeptical", "urgent", "humorous", "patient",
    "blunt", "flattering", "curious", "apologetic", "confident", "diplomatic", "stubborn",
)


def example_values(seed: int, avoid: Sequence[str] = ()) -> list[str]:
    """Two pool values for the answer example, chosen by `seed`, none of them in `avoid`."""
    known = {a.strip().lower() for a in avoid}
    pool = [v for v in EXAMPLE_POOL if v not in known] or list(EXAMPLE_POOL)
    first = seed % len(pool)
    return [pool[first], pool[(first + 1 + seed // len(pool)) % len(pool)]][: min(2, len(pool))]


def _answer(k: int, what: str, example: Sequence[str]) -> list[str]:
    shown = json.dumps({"instructions": list(dict.fromkeys(example))})
    return [
        f"Propose {k} new {what}, each one to three words, none of them already listed.",
        f"Example of the answer format (for other values): {shown}",
        "Answer with JSON only.",
        "Answer:",
    ]


def instructions_prompt(
    spec: DomainSpec, key: str, role: str, current: Sequence[str], k: int,
    example: Sequence[str], category: str | None = None,
) -> str:
    """Shotgun / better response: "here are the values so far; propose k new ones"."""
    lines = _frame(spec, key, role)
    lines.append(f"Current {key} values of the {role}: {', '.join(current)}.")
    if category is not None:
        lines.append(f'The new values must belong to the category "{category}", and each must '
                     "fit in the sentence above in place of <VALUE>.")
    lines.append(f"Goal: values that earn the {role} a higher payoff against the other players' "
                 "current strategies.")
    return "\n".join(lines + _answer(k, f"{key} values", example))


def ranked_prompt(
    spec: DomainSpec, key: str, role: str, scores: dict[str, float], k: int,
    dialogues: Sequence[SampledDialogue], example: Sequence[str],
) -> str:
    """Trajectory-aware: values ranked by exact payoff and sampled dialogues, lowest first."""
    lines = _frame(spec, key, role)
    lines.append(f"Expected payoff of each current {key} of the {role} against the others' "
                 "current strategies (lowest first):")
    lines += [f"  {v}: {s:+.3f}" for v, s in sorted(scores.items(), key=lambda x: (x[1], x[0]))]
    if dialogues:
        lines.append(f"Sample dialogues with the {role}'s payoff (lowest first):")
        for d in sorted(dialogues, key=lambda d: (d.payoff, d.instruction)):
            lines.append(f'--- {key} "{d.instruction}", payoff {d.payoff:+.3f}')
            lines.append(d.transcript)
        lines.append("---")
    lines.append("Goal: values that beat the best one above.")
    return "\n".join(lines + _answer(k, f"{key} values", example))


def categories_prompt(
    spec: DomainSpec, key: str, role: str, category_scores: dict[str, float], k: int,
    example: Sequence[str],
) -> str:
    """Categorical, step 1: existing categories ranked by average payoff; propose new ones."""
    lines = _frame(spec, key, role)
    lines.append(f"Categories of the {role}'s instructions so far, with their average payoff "
                 "(lowest first):")
    lines += [f"  {c}: {s:+.3f}"
              for c, s in sorted(category_scores.items(), key=lambda x: (x[1], x[0]))]
    lines.append(f"Goal: a new kind of {key} (a group of {key} values that each fit in the "
                 "sentence above, in place of <VALUE>) that could earn a higher payoff.")
    return "\n".join(lines + _answer(k, f"kinds of {key}", example))
