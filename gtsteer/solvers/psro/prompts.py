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

from gtsteer.binding import ANY, DomainSpec
from gtsteer.binding.prompts import DEFAULT_INSTRUCTION, fill_template, join_names


class ProposalList(BaseModel):
    """What the proposer must answer: a JSON object with one list of short strings."""

    instructions: list[str] = Field(description="new values, each one to three words")


@dataclass(frozen=True)
class SampledDialogue:
    instruction: str
    payoff: float
    transcript: str


def scenario_text(spec: DomainSpec) -> str:
    """The config's scenario with the role labels as names ("Proposer and Responder need to
    pick one day of the week ...")."""
    names = [role.capitalize() for role in spec.players]
    fields = {f"name{i}": n for i, n in enumerate(names)} | {"players": join_names(names)}
    return " ".join(fill_template(spec.scenario, fields).split())


def _frame(spec: DomainSpec, key: str, role: str) -> list[str]:
    template = spec.instruction_templates.get(key, DEFAULT_INSTRUCTION)
    shown = fill_template(template, {"name": "the speaker", "key": key, "value": "<VALUE>"})
    about = spec.description or spec.name
    return [
        f"Game: {about}",
        f"Scenario: {scenario_text(spec)}",
        (f"Players: {', '.join(spec.players)}. Before each of its messages the {role} is given "
         f"one {key}, shown to it as: {shown.strip()}"),
    ]


def _listed(key: str, role: str, current: Sequence[str], spec: DomainSpec) -> list[str]:
    """The population as a list to continue (OpenSpiel's list-continuation prompt), then the
    config's `psro.examples` of the kind of value wanted."""
    values = [v for v in current if v != ANY]
    lines = [f'The {role}\'s {key} values so far, one per line ("{ANY}" gives no {key}):']
    return [*lines, *[f"* {v}" for v in values], f"* {ANY}", *_examples(spec, key)]


def _examples(spec: DomainSpec, key: str) -> list[str]:
    examples = spec.psro.examples
    return [f"Examples of {key} values: {', '.join(examples)}."] if examples else []


def example_values(spec: DomainSpec, seed: int, known: Sequence[str]) -> list[str]:
    """The values of the answer-format example: two of the config's `psro.examples` not in
    `known`, chosen by `seed` (small models copy the example they are shown, so a rotating
    one still explores), else the population's own values (what the list shows), else none.
    Never a fixed pool: a tone pool shown in a day domain was copied word for word in 22 of
    35 answers (issue 57)."""
    seen = {k.strip().lower() for k in known}
    pool = [v for v in spec.psro.examples if v.strip().lower() not in seen]
    if pool:
        first = seed % len(pool)
        return list(dict.fromkeys([pool[first], pool[(first + 1 + seed // len(pool)) % len(pool)]]))
    return [v for v in known if v != ANY][-2:]


def _answer(k: int, what: str, example: Sequence[str], ask: str = "Propose") -> list[str]:
    values = list(dict.fromkeys(example))
    shown = json.dumps({"instructions": values or ["..."]})
    where = "" if not values else " (values shown for the format; answer with new ones)"
    return [
        f"{ask} {k} new {what}, each one to three words, none of them already listed.",
        f"Answer format{where}: {shown}",
        "Answer with JSON only.",
        "Answer:",
    ]


def instructions_prompt(
    spec: DomainSpec, key: str, role: str, current: Sequence[str], k: int,
    example: Sequence[str], category: str | None = None,
) -> str:
    """Shotgun / better response: "here are the values so far; propose k new ones"."""
    lines = _frame(spec, key, role) + _listed(key, role, current, spec)
    if category is not None:
        lines.append(f'The new values must belong to the category "{category}", and each must '
                     "fit in the sentence above in place of <VALUE>.")
    lines.append(f"Goal: values that earn the {role} a higher payoff against the other players' "
                 "current strategies.")
    return "\n".join(lines + _answer(k, f"{key} values", example, "Continue the list: propose"))


def ranked_prompt(
    spec: DomainSpec, key: str, role: str, scores: dict[str, float], k: int,
    dialogues: Sequence[SampledDialogue], example: Sequence[str],
) -> str:
    """Trajectory-aware: values ranked by exact payoff and sampled dialogues, lowest first."""
    lines = _frame(spec, key, role)
    lines.append(f"Expected payoff of each current {key} of the {role} against the others' "
                 "current strategies (lowest first):")
    lines += [f"  {v}: {s:+.3f}" for v, s in sorted(scores.items(), key=lambda x: (x[1], x[0]))]
    lines += _examples(spec, key)
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
