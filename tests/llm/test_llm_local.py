"""The embedded local model (Gemma 3 270M via llama.cpp). Slow: each test runs the model.

Kept few and short (the model makes ~40 tokens/s on two cores); they still run in `make test`.
"""

from __future__ import annotations

import math
from typing import Literal

import pytest
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM, PromptTooLongError

pytestmark = pytest.mark.slow


class Suspect(BaseModel):
    who: Literal["Akira", "Yuki", "Mika"]


class Clue(BaseModel):
    kind: Literal["howl", "footprint", "alibi"]
    seen_by: list[Literal["Akira", "Yuki", "Mika"]] = Field(max_length=2)


class Accusation(BaseModel):
    """An enum field plus a list of objects holding lists: the grammar has to track nesting."""

    who: Literal["Akira", "Yuki", "Mika"]
    clues: list[Clue] = Field(max_length=2)


@pytest.fixture(scope="module")
def local() -> LLM:
    """One uncached LLM for the module; the llama.cpp model itself is loaded once per process."""
    return LLM("local", use_cache=False)


def test_same_seed_gives_the_same_text(local: LLM) -> None:
    prompt = "Once upon a time, in a quiet village,"
    a = local.generate_sync(prompt, seed=5, temperature=0.9, max_tokens=12)
    b = local.generate_sync(prompt, seed=5, temperature=0.9, max_tokens=12)
    assert a.text == b.text
    assert a.text.strip()
    assert 0 < a.usage.completion_tokens <= 12
    assert a.usage.prompt_tokens > 5
    other = local.generate_sync(prompt, seed=6, temperature=0.9, max_tokens=12)
    assert other.text != a.text  # sampling does depend on the seed


def test_structured_samples_are_valid_by_grammar(local: LLM) -> None:
    prompt = (
        "Three villagers, Akira, Yuki and Mika, argue about who is the werewolf.\n"
        "The suspect as JSON:\n"
    )
    results = [
        local.structured_sync(prompt, Suspect, seed=s, temperature=1.0, max_tokens=24)
        for s in range(20)
    ]
    for r in results:
        assert isinstance(r.value, Suspect)
        assert r.value.who in ("Akira", "Yuki", "Mika")
        assert r.attempts == 1, r.raw  # the JSON-schema grammar makes the first try valid
        assert Suspect.model_validate_json(r.raw) == r.value


def test_choose_ranks_the_obvious_answer_first(local: LLM) -> None:
    # The right answer is listed last so a tie (all scores equal) cannot pass by order.
    result = local.choose_sync("The capital of France is", ["Banana", "Seventeen", "Paris"])
    assert result.method == "loglik"
    assert result.choice == "Paris"
    assert all(math.isfinite(v) and v < 0 for v in result.scores.values())
    ranked = sorted(result.scores.values(), reverse=True)
    assert ranked[0] - ranked[1] > 3.0  # Paris wins by a wide log-likelihood margin

    arithmetic = local.choose_sync("2 + 2 =", ["seventeen", "banana", "4"])
    assert arithmetic.choice == "4"


def test_prompt_longer_than_context_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_LOCAL_CTX", "64")  # models are cached per path:n_ctx
    llm = LLM("local", use_cache=False)
    prompt = "The villagers talked and talked. " * 40
    with pytest.raises(PromptTooLongError) as info:
        llm.generate_sync(prompt, max_tokens=8)
    assert info.value.context == 64
    assert info.value.prompt_tokens > 64
    assert "GTSTEER_LOCAL_CTX" in str(info.value)
    assert llm.usage.failures == 1

    result = CliRunner().invoke(app, ["llm", "ask", "--max-tokens", "8", prompt])
    assert result.exit_code == 2
    assert "PromptTooLongError" in result.output
    assert "Traceback" not in result.output


ACCUSE_PROMPT = (
    "Akira heard a howl; Yuki found a footprint by the mill; Mika has no alibi.\n"
    "The accusation as JSON:\n"
)


def test_fast_grammar_sampling_is_valid_by_construction(local: LLM) -> None:
    """The sampled-token-first grammar check never lets an invalid token through: every sample
    at temperature 1.0 validates on the first attempt, and a seed fixes the JSON."""
    from gtsteer.llm.backends.local.sampling import FastGrammarLlama, GrammarCheckedSampler

    results = [
        local.structured_sync(ACCUSE_PROMPT, Accusation, seed=s, temperature=1.0, max_tokens=120)
        for s in range(10)
    ]
    for r in results:
        assert r.attempts == 1, r.raw
        assert Accusation.model_validate_json(r.raw) == r.value
    assert len({r.raw for r in results}) > 1  # the samples really vary

    again = local.structured_sync(
        ACCUSE_PROMPT, Accusation, seed=3, temperature=1.0, max_tokens=120
    )
    assert again.raw == results[3].raw

    llama = local.backend.llama()  # type: ignore[attr-defined]
    assert isinstance(llama, FastGrammarLlama)
    sampler = llama._sampler
    assert isinstance(sampler, GrammarCheckedSampler)  # the fast path really ran
    assert sampler.fast_tokens > 0


def test_fast_grammar_sampling_matches_grammar_first_when_greedy(local: LLM) -> None:
    """At temperature 0 the sampled-token-first check gives exactly llama-cpp-python's
    grammar-first result (the argmax is kept whenever the grammar allows it)."""
    import json

    from llama_cpp import Llama, LlamaGrammar

    backend = local.backend  # type: ignore[attr-defined]
    fast = backend.llama()
    stock = Llama(model_path=str(backend.path), n_ctx=backend.n_ctx, n_threads=2, verbose=False)
    try:
        schema = json.dumps(Accusation.model_json_schema())
        texts = []
        for llama in (fast, stock):
            llama.reset()
            out = llama.create_completion(
                ACCUSE_PROMPT,
                max_tokens=60,
                temperature=0.0,
                grammar=LlamaGrammar.from_json_schema(schema, verbose=False),
            )
            texts.append(out["choices"][0]["text"])
    finally:
        stock.close()
    assert texts[0] == texts[1]
    Accusation.model_validate_json(texts[0])
