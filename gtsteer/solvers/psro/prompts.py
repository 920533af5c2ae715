"""Proposer prompts of the approximate best-response operators (arXiv 2402.01704, App. D).

Completion-friendly plain text (a base model continues after "Answer:"; chat models read it
as the user turn). Numbers are printed with fixed precision so the same state always yields
the same prompt, hence the same cache key on a rerun.
"""

from __future__ import annotations

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


def _answer(k: int, what: str) -> list[str]:
    return [
        f"Propose {k} new {what}, each one to three words, none of them already listed.",
        'Answer with JSON only, for example {"instructions": ["first", "second"]}.',
        "Answer:",
    ]


def instructions_prompt(
    spec: DomainSpec, key: str, role: str, current: Sequence[str], k: int,
    category: str | None = None,
) -> str:
    """Shotgun / better response: "here are the values so far; propose k new ones"."""
    lines = _frame(spec, key, role)
    lines.append(f"Current {key} values of the {role}: {', '.join(current)}.")
    if category is not None:
        lines.append(f'The new values must belong to the category "{category}".')
    lines.append(f"Goal: values that earn the {role} a higher payoff against the other players' "
                 "current strategies.")
    return "\n".join(lines + _answer(k, f"{key} values"))


def ranked_prompt(
    spec: DomainSpec, key: str, role: str, scores: dict[str, float], k: int,
    dialogues: Sequence[SampledDialogue],
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
    return "\n".join(lines + _answer(k, f"{key} values"))


def categories_prompt(
    spec: DomainSpec, key: str, role: str, category_scores: dict[str, float], k: int
) -> str:
    """Categorical, step 1: existing categories ranked by average payoff; propose new ones."""
    lines = _frame(spec, key, role)
    lines.append(f"Categories of the {role}'s instructions so far, with their average payoff "
                 "(lowest first):")
    lines += [f"  {c}: {s:+.3f}"
              for c, s in sorted(category_scores.items(), key=lambda x: (x[1], x[0]))]
    lines.append("Goal: a new kind of instruction (for example a negotiation tactic, a framing, "
                 "a level of detail) that could earn a higher payoff.")
    return "\n".join(lines + _answer(k, "categories"))
