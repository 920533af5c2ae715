"""The `fake` backend: deterministic, seed-sensitive, schema-valid, and able to score options."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from gtsteer.llm import LLM, FakeBackend, make_backend
from gtsteer.testing import EchoingFake


class Offer(BaseModel):
    fruit: Literal["apple", "banana", "kiwi"]
    quantity: int = Field(ge=1, le=5)
    price: float = Field(ge=0.0, le=2.0)
    accept: bool
    note: str | None = None


class Counter(BaseModel):
    speaker: Literal["Akira", "Yuki"]
    offers: list[Offer] = Field(min_length=1, max_length=3)


def test_model_string_selects_fake_backend() -> None:
    assert isinstance(make_backend("fake"), FakeBackend)
    assert make_backend("fake:other").model == "fake:other"


@pytest.mark.parametrize("model", ["fake", "fake:other", "local", "local:smollm2-135m",
                                   "openai/gpt-4o-mini"])
def test_an_llm_names_its_model_as_written_with_or_without_an_explicit_backend(
        model, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    # Building a local or litellm backend loads nothing until the first call.
    assert LLM(model).model == model
    assert LLM(backend=make_backend(model)).model == model


def test_same_inputs_give_same_text_across_instances() -> None:
    a = LLM("fake", use_cache=False).generate_sync("Offer me two apples.", seed=3)
    b = LLM("fake", use_cache=False).generate_sync("Offer me two apples.", seed=3)
    assert a.text == b.text
    assert a.text  # not empty
    assert a.cached is False and b.cached is False


def test_different_seeds_give_different_text() -> None:
    llm = LLM("fake", use_cache=False)
    texts = {llm.generate_sync("Offer me two apples.", seed=s).text for s in range(6)}
    assert len(texts) == 6


def test_fake_never_echoes_the_prompt_but_the_test_variant_does() -> None:
    prompt = "Notes.\n(Ann writes in a zesty tone.)\nAnn:"
    plain = LLM("fake", use_cache=False).generate_sync(prompt, seed=0).text
    assert "zesty" not in plain.lower()
    # Different prompts still give different text (so a transcript reflects the choice).
    other = LLM("fake", use_cache=False).generate_sync(prompt.replace("zesty", "calm"), seed=0)
    assert other.text != plain
    echoing = LLM(backend=EchoingFake(), use_cache=False).generate_sync(prompt, seed=0).text
    assert "zesty tone" in echoing.lower()


def test_chat_messages_are_accepted_and_deterministic() -> None:
    llm = LLM("fake", use_cache=False)
    messages = [
        {"role": "system", "content": "You trade fruit."},
        {"role": "user", "content": "What do you offer?"},
    ]
    first = llm.generate_sync(messages, seed=1)
    assert first.text == llm.generate_sync(messages, seed=1).text
    assert first.text != llm.generate_sync(messages, seed=2).text


def test_max_tokens_bounds_the_fake_text() -> None:
    text = LLM("fake", use_cache=False).generate_sync("Say a lot", seed=5, max_tokens=3).text
    assert len(text.split()) <= 3


def test_structured_requests_give_valid_objects_for_many_seeds() -> None:
    llm = LLM("fake", use_cache=False)
    results = [llm.structured_sync("Make a counter-offer.", Counter, seed=s) for s in range(20)]
    for r in results:
        assert isinstance(r.value, Counter)
        assert r.attempts == 1
        assert r.value.speaker in ("Akira", "Yuki")
        assert 1 <= len(r.value.offers) <= 3
        assert all(1 <= o.quantity <= 5 and 0.0 <= o.price <= 2.0 for o in r.value.offers)
        assert Counter.model_validate_json(r.raw) == r.value
    # Seeds matter for structured output too: 20 samples are not all the same object.
    assert len({r.raw for r in results}) > 10
    assert {r.value.speaker for r in results} == {"Akira", "Yuki"}


def test_structured_is_deterministic() -> None:
    a = LLM("fake", use_cache=False).structured_sync("Offer", Counter, seed=9)
    b = LLM("fake", use_cache=False).structured_sync("Offer", Counter, seed=9)
    assert a.value == b.value


def test_choose_scores_every_option() -> None:
    llm = LLM("fake", use_cache=False)
    options = ["logos", "pathos", "ethos", "silence"]
    result = llm.choose_sync("Pick a rhetorical style.", options)
    assert set(result.scores) == set(options)
    assert result.method == "hash"
    assert result.choice == max(options, key=lambda o: result.scores[o])
    assert len(set(result.scores.values())) == len(options)
    again = LLM("fake", use_cache=False).choose_sync("Pick a rhetorical style.", options)
    assert again.scores == result.scores


def test_choose_deduplicates_and_rejects_single_option() -> None:
    llm = LLM("fake", use_cache=False)
    result = llm.choose_sync("Pick", ["A", "B", "A"])
    assert set(result.scores) == {"A", "B"}
    with pytest.raises(ValueError, match="at least two"):
        llm.choose_sync("Pick", ["A", "A"])


def test_sync_wrapper_works_inside_a_running_loop() -> None:
    """Scripts in notebooks or async code may call the sync API from inside a loop."""
    import asyncio

    async def inner() -> str:
        return LLM("fake", use_cache=False).generate_sync("Hello", seed=1).text

    expected = LLM("fake", use_cache=False).generate_sync("Hello", seed=1).text
    assert asyncio.run(inner()) == expected
