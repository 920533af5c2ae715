"""Helpers for the domain tests: configs as dicts, scripted reward contexts, a keyword judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gtsteer.binding import DomainSpec, Instance, RewardContext, Turn
from gtsteer.domains import spec_from_dict
from gtsteer.domains.fruit_trade import render_counts
from gtsteer.llm import LLM, Backend, GenerationRequest, RawCompletion

CONFIGS = Path(__file__).resolve().parent.parent / "gtsteer" / "configs"


def config_dict(name: str) -> dict[str, Any]:
    return yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())


def spec_of(name: str, **update: Any) -> DomainSpec:
    return spec_from_dict({**config_dict(name), **update}, name)


def context(
    spec: DomainSpec, private_info: list[dict[str, str]], llm: LLM, verdict: str | None = None
) -> RewardContext:
    instance = Instance(index=0, seed=1, names=["Ann", "Ben"], private_info=private_info,
                        scenario="Ann and Ben talk.")
    turns = [Turn(speaker=0, instruction=None, text="Hello."),
             Turn(speaker=1, instruction=None, text="Hi.")]
    return RewardContext(spec=spec, instance=instance, transcript=turns, llm=llm, verdict=verdict)


class KeywordJudge(Backend):
    """A domain fake for verdict games.

    Messages: the player whose prompt names role `questioner_role` says one of `questions`
    (picked by the request seed); everyone else says `answer`. Judge: `choose` scores come from
    `scores(prompt, option)`; the default likes the target verdict when the transcript holds
    `keyword`, and never continues."""

    kind = "keyword-judge"
    supports_grammar = True

    def __init__(self, questions: list[str], answer: str = "I was at home.",
                 questioner_role: str = "role: prosecutor", keyword: str = "confess",
                 target: str = "guilty"):
        super().__init__("keyword-judge")
        self.questions, self.answer = questions, answer
        self.questioner_role, self.keyword, self.target = questioner_role, keyword, target
        self.judged: list[list[str]] = []

    async def complete(self, request: GenerationRequest, json_schema: dict | None = None):
        assert json_schema is None, "verdict games ask no structured question"
        prompt = request.as_text()
        if self.questioner_role in prompt:
            return RawCompletion(text=self.questions[request.seed % len(self.questions)])
        return RawCompletion(text=self.answer)

    def score(self, prompt: str, option: str) -> float:
        if option == self.target:
            return 2.0 if self.keyword in prompt else -2.0
        return -5.0 if option == "continue" else 0.0

    async def score_options(self, request: GenerationRequest, options: list[str]):
        self.judged.append(list(options))
        return {o: self.score(request.as_text(), o) for o in options}


# Two players' baskets and values of a fruit trade (the offer tests' shared instance).
FRUIT_OWNED = [{"apple": 2, "banana": 0, "blueberry": 3, "kiwi": 1},
         {"apple": 0, "banana": 3, "blueberry": 1, "kiwi": 2}]
FRUIT_VALUES = [{"apple": 5, "banana": 2, "blueberry": 1, "kiwi": 6},
          {"apple": 3, "banana": 1, "blueberry": 4, "kiwi": 2}]
FRUIT_INFO = [{"fruits_owned": render_counts(o), "fruit_values": render_counts(v)}
        for o, v in zip(FRUIT_OWNED, FRUIT_VALUES, strict=True)]
