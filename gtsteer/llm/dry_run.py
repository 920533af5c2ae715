"""A dry run: what a run would send, without sending anything.

A session with a `DryRun` (`gtsteer.llm.session`) gives every client built inside it a
`StandIn` in place of its backend. The run then goes its normal way: a cached answer is served
from the cache as usual, and every request that would go out is counted instead, with its
prompt's tokens, and answered by a stand-in that is never stored: text of the estimated
length, a schema-valid object for a structured request. So the count follows the real tree,
level by level, with the real prompts rendered.

The tree can depend on answers (an end check that says "over" stops a branch, sampled
messages that coincide share a subtree, a reward that fails is retried); stand-ins answer
`false` to every yes/no field, so the count is an estimate of a real run's new calls, not an
exact one (tests/llm/test_dry_run.py holds it between the real run's new calls and twice them).

Completion tokens are estimated at the mean length of the answers of the same kind found in
the cache during the run (text and structured apart), else at `max_tokens` for text and at the
stand-in object's length for a structured answer; the upper bound counts every answer at its
`max_tokens`. Prompt tokens are litellm's count for a served model (its tokenizer where it
knows the model, tiktoken's otherwise) and about 4 characters a token for the local and fake
backends, whose tokenizers would mean loading the model. Prices come from litellm's cost map
(`Backend.price`); a model it cannot price is "cost unknown".
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.schema_fill import WORDS, fill, seeded_rng
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

#: Characters per token where no tokenizer is at hand (OpenAI's rule of thumb for English).
CHARS_PER_TOKEN = 4
#: Marks a remembered stand-in answer.
STAND_IN = "_dry_run_stand_in"


@dataclass
class _Mean:
    total: int = 0
    n: int = 0

    def add(self, tokens: int) -> None:
        self.total += tokens
        self.n += 1

    @property
    def value(self) -> int | None:
        return round(self.total / self.n) if self.n else None


@dataclass
class ModelEstimate:
    """What one model would be sent in a dry run."""

    model: str
    requests: int = 0
    prompt_tokens: int = 0
    #: Every answer at its estimated length.
    completion_tokens: int = 0
    #: Every answer at its `max_tokens`.
    completion_tokens_max: int = 0
    #: USD at the estimate and at the bound; None: litellm cannot price the model.
    cost: float | None = 0.0
    cost_max: float | None = 0.0

    def add(self, other: ModelEstimate) -> None:
        """Count `other` in this estimate too (a cost stays None once any part is unpriced)."""
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.completion_tokens_max += other.completion_tokens_max
        self.cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        self.cost_max = (None if self.cost_max is None or other.cost_max is None
                         else self.cost_max + other.cost_max)


@dataclass
class DryRun:
    """The counts of one dry run, across every model of the run (thread-safe)."""

    models: dict[str, ModelEstimate] = field(default_factory=dict)
    #: This run's stand-in answers by cache key (never stored in the cache).
    stand_ins: dict[str, dict[str, Any]] = field(default_factory=dict)
    _means: dict[str, _Mean] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, backend: Backend) -> StandIn:
        return StandIn(backend, self)

    def seen(self, kind: str, completion_tokens: int) -> None:
        """An answer the cache held (`text` or `structured`): the estimate's sample."""
        with self._lock:
            self._means.setdefault(kind, _Mean()).add(completion_tokens)

    def mean(self, kind: str) -> int | None:
        with self._lock:
            return self._means[kind].value if kind in self._means else None

    @property
    def cached_answers(self) -> int:
        with self._lock:
            return sum(m.n for m in self._means.values())

    def count(self, backend: Backend, prompt: int, completion: int, bound: int) -> Usage:
        """One request that would go out; its usage as the meter should count it."""
        price, price_max = backend.price(prompt, completion), backend.price(prompt, bound)
        with self._lock:
            self.models.setdefault(backend.model, ModelEstimate(backend.model)).add(ModelEstimate(
                backend.model, 1, prompt, completion, bound, price, price_max))
        return Usage(prompt_tokens=prompt, completion_tokens=completion,
                     cost_usd=price or 0.0, priced=price is not None)

    def totals(self) -> ModelEstimate:
        """All models together (cost None where any is unpriced)."""
        with self._lock:
            out = ModelEstimate("all")
            for m in self.models.values():
                out.add(m)
            return out


def _false_booleans(schema: Any) -> Any:
    """`schema` with every boolean a `false` const: the stand-in that keeps a dialogue going."""
    if isinstance(schema, dict):
        if schema.get("type") == "boolean":
            return {**schema, "const": False}
        return {k: _false_booleans(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_false_booleans(v) for v in schema]
    return schema


class StandIn(Backend):
    """A backend's double in a dry run: the same identity (so the cache's answers are found)
    and prompt shape, no call; each request counted by its `DryRun`."""

    cancellable = True

    def __init__(self, real: Backend, dry: DryRun):
        super().__init__(real.model)
        self.real, self.dry = real, dry
        self.kind = real.kind
        self.max_concurrency = real.max_concurrency
        self.supports_grammar = real.supports_grammar

    def identity(self) -> dict[str, Any]:
        return self.real.identity()

    def capabilities(self) -> dict[str, str | None]:
        return self.real.capabilities()

    def price(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        return self.real.price(prompt_tokens, completion_tokens)

    def tokens(self, text: str, request: GenerationRequest | None = None) -> int:
        """Tokens of `text` (or of `request` as sent), by the estimate the module names."""
        counted = self.real.estimate_tokens(text, request)
        return counted if counted is not None else max(1, -(-len(text) // CHARS_PER_TOKEN))

    def remember(self, key: str, value: dict[str, Any]) -> None:
        """A stand-in answer, kept for this run only: a real run asks a repeated request once
        (the cache answers the repeat), so the dry run counts it once too."""
        self.dry.stand_ins[key] = {**value, STAND_IN: True}

    def recall(self, key: str) -> dict[str, Any] | None:
        return self.dry.stand_ins.get(key)

    def seen(self, kind: str, hit: dict[str, Any]) -> None:
        """A cache hit of `kind` (`text` or `structured`), for the completion estimate."""
        if hit.get(STAND_IN):
            return  # a stand-in is no sample of the model's answers
        if kind == "text":
            self.dry.seen(kind, int((hit.get("usage") or {}).get("completion_tokens") or 0)
                          or self.tokens(str(hit.get("text", ""))))
        elif kind == "structured":
            self.dry.seen(kind, self.tokens(str(hit.get("raw", ""))))

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        text = request.as_text()
        rng = seeded_rng(self.model, text, request.seed, json_schema)
        prompt = self.tokens(text, request)
        if json_schema is not None:
            out = json.dumps(fill(_false_booleans(json_schema), rng))
            estimate = self.dry.mean("structured") or self.tokens(out)
        else:
            estimate = self.dry.mean("text") or request.max_tokens
            out = " ".join(rng.choice(WORDS) for _ in range(max(1, estimate))).capitalize() + "."
        estimate = min(estimate, request.max_tokens)
        usage = self.dry.count(self, prompt, estimate, request.max_tokens)
        return RawCompletion(text=out, usage=usage)

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        if type(self.real).score_options is Backend.score_options:
            return None, Usage()  # the real one chooses by a structured call: counted there
        text = request.as_text()
        usage = self.dry.count(self, self.tokens(text, request), 1, 1)
        return {o: -seeded_rng(self.model, text, request.seed, o).random() for o in options}, usage
