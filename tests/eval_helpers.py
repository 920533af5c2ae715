"""Domain fakes whose right answers are known, for the `gtsteer eval` tests.

Not a test module; imported by tests.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gtsteer.binding.reward import player_keys
from gtsteer.binding.reward_cases import RewardCase
from gtsteer.llm import Backend, GenerationRequest, RawCompletion

#: What the tone writer says for each instruction: "submissive" never names itself, only a word
#: from its definition, so only the classifier that sees definitions can recover it.
TONE_TEXT = {
    "calm": "I stay calm and offer you one apple.",
    "assertive": "I am assertive: give me two kiwis now.",
    "submissive": "I am yielding to you, whatever you prefer.",
    None: "Here is my offer of one banana.",
}
_TONE = re.compile(r"writes in an? (\w+) tone")
_MESSAGE = re.compile(r'Message from [^:]+: "(.*)"')
_DEFINITION = re.compile(r"^- (\w+): (.*)$", re.MULTILINE)


class ToneBackend(Backend):
    """Writes `TONE_TEXT[instructed tone]`; classifies by words: an option named in the message
    wins, then (with definitions) an option sharing a word of 5+ letters with its definition,
    else the first option. `bias` adds a label preference that ignores the message."""

    kind = "tone-oracle"
    max_concurrency = 16

    def __init__(self, bias: dict[str, float] | None = None) -> None:
        super().__init__("tone-oracle")
        self.prompts: list[str] = []
        self.bias = bias or {}  # added to an option's score whatever the message

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        prompt = request.as_text()
        self.prompts.append(prompt)
        tone = _TONE.search(prompt)
        return RawCompletion(text=TONE_TEXT.get(tone.group(1) if tone else None, TONE_TEXT[None]))

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        prompt = request.as_text()
        message = _MESSAGE.search(prompt).group(1).lower()
        words = set(re.findall(r"[a-z]+", message))
        defs = dict(_DEFINITION.findall(prompt))
        scores = {}
        for i, option in enumerate(options):
            if option.lower() in words:
                scores[option] = 0.0
            elif option in defs and words & {w for w in re.findall(r"[a-z]+", defs[option])
                                             if len(w) >= 5}:
                scores[option] = -1.0
            else:
                scores[option] = -10.0 - 0.01 * i
            scores[option] += self.bias.get(option, 0.0)
        return scores


class TradeOracle(Backend):
    """Extracts each case's trade exactly (looked up by its transcript); as a "free" payoff
    model it answers 0 for everyone."""

    kind = "trade-oracle"
    max_concurrency = 16
    supports_grammar = True

    def __init__(self, cases: list[RewardCase]):
        super().__init__("trade-oracle")
        self.cases = cases

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        assert json_schema is not None, "only reward calls are expected"
        prompt = request.as_text()
        props = json_schema["properties"]
        if "deal" not in props:  # the free path's payoff object
            return RawCompletion(text=json.dumps({k: 0.0 for k in props}))
        case = next(c for c in self.cases if all(t.text in prompt for t in c.transcript)
                    and all(n in prompt for n in c.instance.names))
        names = case.instance.names
        answer: dict[str, Any] = {"deal": case.facts["deal"]}
        for key, name in zip(player_keys(names), names, strict=True):
            gives = case.facts.get(f"{name}_gives", {})
            answer[f"{key}_gives"] = [f for f, n in gives.items() for _ in range(n)]
        return RawCompletion(text=json.dumps(answer))


class DayOracle(Backend):
    """Reads each case's agreed day exactly (looked up by its transcript); as a "free" payoff
    model it answers 10 for everyone."""

    kind = "day-oracle"
    max_concurrency = 16
    supports_grammar = True
    FREE_ANSWER = 10.0

    def __init__(self, cases: list[RewardCase]):
        super().__init__("day-oracle")
        self.cases = cases

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        assert json_schema is not None, "only reward calls are expected"
        prompt = request.as_text()
        props = json_schema["properties"]
        if "agreed" not in props:  # the free path's payoff object
            return RawCompletion(text=json.dumps({k: self.FREE_ANSWER for k in props}))
        return RawCompletion(text=json.dumps(self._case(prompt).facts))

    async def score_options(self, request: GenerationRequest, options: list[str]):
        """The meeting utility's two questions: agreed (yes / no), then which day. A content-free
        calibration prompt matches no case and scores every option alike."""
        try:
            facts = self._case(request.as_text()).facts
        except StopIteration:
            return dict.fromkeys(options, 0.0)
        right = ("yes" if facts["agreed"] else "no") if options == ["yes", "no"] else facts["day"]
        return {o: float(o == right) for o in options}

    def _case(self, prompt: str) -> RewardCase:
        return next(c for c in self.cases if all(t.text in prompt for t in c.transcript)
                    and all(n in prompt for n in c.instance.names))
