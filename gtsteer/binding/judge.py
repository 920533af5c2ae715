"""The judge of a verdict game: a fixed function of the transcript, asked through `choose`.

After every round it answers one of the spec's verdicts (the game ends) or "continue"; after
the last round it must give a verdict. Scores come from `LLM.choose` (log-likelihoods where the
backend has them), so the same transcript always gets the same scores; a positive judge
temperature samples the verdict from softmax(scores / T) with a seed fixed by the history, so
the judge remains a function of the transcript, as the verdict-game definition requires.
"""

from __future__ import annotations

import math
import random

from pydantic import BaseModel

from gtsteer.binding.instances import Instance
from gtsteer.binding.prompts import Turn, fill_template, join_names, public_fields
from gtsteer.binding.spec import DomainSpec, JudgeSpec
from gtsteer.llm import LLM


class Judgement(BaseModel):
    """One judge call: the verdict (or the continue label) and the probability of each option."""

    verdict: str
    probs: dict[str, float]


def judge_of(spec: DomainSpec) -> JudgeSpec:
    if spec.judge is None:
        raise ValueError(f"domain `{spec.name}` has no `judge`")
    return spec.judge


def judge_options(judge: JudgeSpec, final: bool) -> list[str]:
    """What the judge may answer: verdicts, plus continue unless this is the last round."""
    return list(judge.verdicts) if final else [*judge.verdicts, judge.continue_label]


def judge_prompt(
    spec: DomainSpec, instance: Instance, turns: list[Turn], options: list[str],
    template: str | None = None,
) -> str:
    judge = judge_of(spec)
    options_text = join_names([f'"{o}"' for o in options]).replace(" and ", " or ")
    fields = {**public_fields(instance, turns), "options": options_text}
    return fill_template(template or judge.prompt, fields).rstrip()


def probabilities(scores: dict[str, float], temperature: float = 1.0) -> dict[str, float]:
    """softmax(scores / temperature); temperature 0 puts all mass on the first best option."""
    if temperature <= 0.0:
        best = max(scores, key=lambda o: scores[o])
        return {o: float(o == best) for o in scores}
    top = max(scores.values())
    weights = {o: math.exp((s - top) / temperature) for o, s in scores.items()}
    total = sum(weights.values())
    return {o: w / total for o, w in weights.items()}


def pick(probs: dict[str, float], seed: int) -> str:
    """A verdict drawn from `probs` with a fixed seed (the argmax when one option has mass 1)."""
    if max(probs.values()) >= 1.0:
        return max(probs, key=lambda o: probs[o])
    return random.Random(seed).choices(list(probs), weights=list(probs.values()))[0]


async def ask_judge(
    llm: LLM,
    spec: DomainSpec,
    instance: Instance,
    turns: list[Turn],
    *,
    final: bool,
    seed: int,
    template: str | None = None,
    temperature: float | None = None,
) -> Judgement:
    """The judge's answer after `turns`; `template`/`temperature` override the spec's (evals)."""
    judge = judge_of(spec)
    options = judge_options(judge, final)
    result = await llm.choose(judge_prompt(spec, instance, turns, options, template), options)
    temp = judge.temperature if temperature is None else temperature
    return Judgement(
        verdict=pick(probabilities(result.scores, temp), seed),
        probs=probabilities(result.scores, 1.0),
    )
