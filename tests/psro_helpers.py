"""PSRO test doubles: a known-payoff domain and a scripted proposer. Not a test module."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from gtsteer.binding import Domain
from gtsteer.domains import register_domain
from gtsteer.llm import LLM, Backend
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

STRENGTH_CONFIG = Path(__file__).parent / "data" / "psro_strength.yaml"
STRENGTH = {"any": 0.0, "calm": 0.0, "assertive": 1.0, "submissive": -1.0, "bold": 2.0,
            "fierce": 3.0, "meek": -2.0, "timid": -1.5, "firm": 1.0}


async def strength_utility(ctx: Any) -> list[float]:
    own = [STRENGTH.get(ctx.instructions(p)[0], 0.0) for p in range(2)]
    return [own[0] - 0.5 * own[1], own[1] - 0.5 * own[0]]


STRENGTH_DOMAIN = register_domain(Domain(name="test_psro_strength", utility=strength_utility))


class CountingBackend(Backend):
    """Messages that differ per prompt and sample (so every history is its own request);
    counts calls. Rewards come from the utility, not from a model."""

    kind = "counting"
    max_concurrency = 16
    supports_grammar = True

    def __init__(self) -> None:
        super().__init__("counting")
        self.calls = 0

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        self.calls += 1
        digest = hashlib.sha256(request.as_text().encode()).hexdigest()[:6]
        return RawCompletion(text=f"Fine {digest} (sample {request.seed % 97})", usage=Usage())


class ScriptedProposer(Backend):
    """Answers proposer prompts from per-role scripts (one answer per call, in order; the last
    one repeats). An answer is a list (sent as JSON) or a raw string (sent as is)."""

    kind = "scripted-proposer"
    max_concurrency = 1
    supports_grammar = True

    def __init__(self, scripts: dict[str, list[list[Any] | str]]):
        super().__init__("scripted-proposer")
        self.scripts = scripts
        self.prompts: dict[str, list[str]] = {role: [] for role in scripts}

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        text = request.as_text()
        role = next(r for r in self.scripts if f"the {r} is given" in text)
        self.prompts[role].append(text)
        script = self.scripts[role]
        answer = script[min(len(self.prompts[role]), len(script)) - 1]
        raw = answer if isinstance(answer, str) else json.dumps({"instructions": answer})
        return RawCompletion(text=raw, usage=Usage())


def llm_for(backend: Backend) -> LLM:
    return LLM(backend.model, backend=backend, structured_attempts=1, max_retries=0)


#: The population, as the proposer prompt lists it to be continued ("* assertive").
LISTED = re.compile(r"^\* (.+)$", re.MULTILINE)


class NamingProposer(Backend):
    """Names the first of `values` not yet in the population (nothing once all are); asked
    for kinds (the categorical operator's first call), it names one new category."""

    kind = "naming-proposer"
    max_concurrency = 1
    supports_grammar = True

    def __init__(self, name: str, values: list[str]):
        super().__init__(name)
        self.values = values
        self.calls = 0

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        self.calls += 1
        text = request.as_text()
        if "new kinds of" in text:
            answer = [f"kind {self.calls}"]
        else:
            current = set(LISTED.findall(text))
            answer = [v for v in self.values if v not in current][:1]
        return RawCompletion(text=json.dumps({"instructions": answer}), usage=Usage())


class Models:
    """The study's `clients` hook: one writer for every row, a fresh proposer per row."""

    def __init__(self) -> None:
        self.writer = CountingBackend()
        self.asked: list[tuple[str, str]] = []
        self.proposers: list[NamingProposer] = []

    def __call__(self, role: str, model: str):
        self.asked.append((role, model))
        if role == "writer":
            return llm_for(self.writer)
        values = ["fierce"] if "qwen" in model else ["assertive", "bold"]
        backend = NamingProposer(f"proposer-{model}", values)
        self.proposers.append(backend)
        return llm_for(backend)

    @property
    def calls(self) -> int:
        return self.writer.calls + sum(p.calls for p in self.proposers)
