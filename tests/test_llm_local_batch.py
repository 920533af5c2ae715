"""Batched decoding in the local backend: many requests decoded together give exactly the
answers the one-at-a-time path gives (llama.cpp keeps one KV stream per sequence and computes
each batch column on its own), each request ends by its own rules, and a bad request fails
alone. Slow: runs SmolLM2; kept small (short prompts and outputs)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from gtsteer.llm.backends.batch_decode import BATCH_ENV, DEFAULT_BATCH, GROUP_ROWS, local_batch
from gtsteer.llm.backends.local import LocalBackend
from gtsteer.llm.errors import ModelConfigError, PromptTooLongError
from gtsteer.llm.types import GenerationRequest

SMOL = "local:smollm2-135m"
HEAD = (
    "Alice has five apples and Bob has three bananas. They meet at the market to trade, and "
    "each wants the better half of the deal. "
)


class Deal(BaseModel):
    fruit: str
    count: int


def requests() -> list[tuple[str, Any]]:
    """A mixed workload: sampled and greedy text, with and without stop strings, JSON under a
    grammar, and `choose` questions with single- and multi-token options."""
    work: list[tuple[str, Any]] = []
    for i in range(10):
        work.append(
            (
                "text",
                GenerationRequest(
                    prompt=HEAD + f"Turn {i}: write what Alice says to Bob.",
                    seed=i,
                    temperature=0.0 if i % 3 == 0 else 0.8,
                    max_tokens=12 + 3 * i,
                    stop=["\n", "Bob"] if i % 2 else [],
                ),
            )
        )
    for seed in range(2):
        work.append(
            ("json", GenerationRequest(prompt=HEAD + "The deal as JSON:", seed=seed, max_tokens=40))
        )
    for k in range(2):
        work.append(
            (
                "choose",
                (
                    GenerationRequest(prompt=HEAD + f"Question {k}: is the trade fair? Answer:"),
                    ["yes", "no", "only for Bob, not for Alice"],
                ),
            )
        )
    return work


async def serve(backend: LocalBackend, work: list[tuple[str, Any]]) -> list[Any]:
    async def one(kind: str, item: Any) -> Any:
        if kind == "text":
            return (await backend.complete(item)).text
        if kind == "json":
            return (await backend.complete(item, Deal.model_json_schema())).text
        request, options = item
        return (await backend.score_options_with_usage(request, options))[0]

    return await asyncio.gather(*(one(kind, item) for kind, item in work))


def backend(batch: int) -> LocalBackend:
    return LocalBackend(SMOL, batch=batch, threads=1)


@pytest.fixture(scope="module")
def one_at_a_time() -> list[Any]:
    return asyncio.run(serve(backend(1), requests()))


def test_batch_size_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BATCH_ENV, raising=False)
    assert local_batch() == DEFAULT_BATCH
    monkeypatch.setenv(BATCH_ENV, "1")
    assert local_batch() == 1
    for bad in ("0", "-2", "four", "65"):
        monkeypatch.setenv(BATCH_ENV, bad)
        with pytest.raises(ModelConfigError, match=BATCH_ENV):
            local_batch()


@pytest.mark.slow
def test_a_mixed_batch_equals_one_at_a_time_and_each_ends_by_its_own_rules(
    one_at_a_time: list[Any],
) -> None:
    work = requests()
    engine = backend(8).engine()
    got = asyncio.run(serve(backend(8), work))
    assert engine.batcher is not None and engine.batcher.peak_active > 1  # really batched
    assert got == one_at_a_time
    texts = [g for (kind, _), g in zip(work, got, strict=True) if kind == "text"]
    assert len(set(texts)) > 5  # the answers really differ
    for (kind, item), answer in zip(work, got, strict=True):
        if kind == "text" and item.stop:
            assert not any(stop in answer for stop in item.stop)  # cut before its stop
        if kind == "json":
            Deal.model_validate(json.loads(answer))  # valid by construction under the grammar
        if kind == "choose":
            assert set(answer) == set(item[1]) and all(v < 0 for v in answer.values())


@pytest.mark.slow
def test_batched_outputs_repeat_exactly_on_a_fresh_engine(one_at_a_time: list[Any]) -> None:
    """Another batch size is another engine (cold KV streams, cold prefix cache)."""
    assert asyncio.run(serve(backend(3), requests())) == one_at_a_time


@pytest.mark.slow
def test_a_prompt_too_long_fails_alone(one_at_a_time: list[Any]) -> None:
    work = requests()
    long = GenerationRequest(prompt="apple " * 5000, max_tokens=8)
    b = backend(8)

    async def mixed() -> tuple[list[Any], BaseException | None]:
        bad = asyncio.ensure_future(b.complete(long))
        good = await serve(b, work)
        try:
            await bad
        except PromptTooLongError as exc:
            return good, exc
        return good, None

    good, error = asyncio.run(mixed())
    assert isinstance(error, PromptTooLongError)
    assert good == one_at_a_time


@pytest.mark.slow
def test_a_model_with_grouped_kernels_batches_on_unrepacked_weights() -> None:
    """Gemma 3's Q4_K weights are repacked by default for llama.cpp's 4-row interleaved kernel,
    whose rows round by their group, so a row's answer would depend on its neighbours. Asked to
    batch, the engine reloads the weights unrepacked and decodes as many rows together as the
    probe finds exact at every decode size: answers do not depend on the batch size (B = 8 and
    B = 5 agree). B = 1 keeps the repacked weights, so it may answer differently.
    SmolLM2's Q4_1 has no repacked kernel and is never reloaded."""
    work = [item for item in requests() if item[0] != "json"][:8]
    # B = 5 also reloads (B = 3 need not: decodes of 3 rows are exact on the repacked kernels)
    eight, five = (LocalBackend("local:gemma3-270m", batch=b, threads=1) for b in (8, 5))
    batched = asyncio.run(serve(eight, work))
    engine = eight.engine()
    # unrepacked, tinyBLAS still tiles 8 columns differently from 7 (probed: 7 rows per decode)
    assert engine.batcher is not None and GROUP_ROWS <= engine.batcher.rows_per_decode < 8
    assert engine.repacked is False and engine.unbatched_reason is None
    assert engine.batcher.peak_active > 1  # it really decoded several sequences together
    assert five.engine().repacked is False
    assert asyncio.run(serve(five, work)) == batched
    one = LocalBackend("local:gemma3-270m", batch=1, threads=1)
    assert one.engine().repacked is True
    # the cache keys follow the weights: the unrepacked sizes share one, B = 1 has its own
    assert eight.identity() == five.identity() == {**one.identity(), "weights": "unrepacked"}
    smol = backend(8).engine()
    assert smol.batcher is not None and smol.batcher.rows_per_decode == 8
    assert smol.repacked is True and smol.unbatched_reason is None
    assert backend(8).identity() == backend(1).identity()  # SmolLM2: B = 1's key and answers


@pytest.mark.slow
def test_batching_on_the_repacked_weights_answers_as_one_at_a_time() -> None:
    """Gemma 3 at B = 3 keeps the repacked weights (decodes of 3 rows are exact on them) and
    batches: its answers are B = 1's, so the two share a cache key. The weights, not the path
    (batch engine or one at a time), decide the answers."""
    work = [item for item in requests() if item[0] != "json"][:8]
    three, one = (LocalBackend("local:gemma3-270m", batch=b, threads=1) for b in (3, 1))
    batched = asyncio.run(serve(three, work))
    engine = three.engine()
    assert engine.batcher is not None and engine.batcher.peak_active > 1
    assert engine.repacked is True
    assert batched == asyncio.run(serve(one, work))
    assert three.identity() == one.identity() and "weights" not in one.identity()
