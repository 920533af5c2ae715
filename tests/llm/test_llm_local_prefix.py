"""Prompt-prefix reuse in the local backend is exact: outputs and logits are the same bytes with
reuse on or off and whatever order requests are served in. Slow: runs the embedded models, kept
small (short prompts and outputs, SmolLM2 where it suffices). Run with GTSTEER_LOCAL_THREADS=1
on a shared machine; correctness does not depend on timing."""

from __future__ import annotations

import asyncio
import itertools
import math
import random
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import BaseModel

from gtsteer.llm import LLM
from gtsteer.llm.backends.local import LlamaEngine, LocalBackend, serial
from gtsteer.llm.backends.local.prefix_cache import BLOCK, block_keys, tail_key
from gtsteer.llm.client import run_sync
from gtsteer.llm.usage import UsageReport

pytestmark = pytest.mark.slow

SMOL = "local:smollm2-135m"
NAMES = ("Akira", "Yuki", "Mika")
OPTIONS = list(NAMES)
KINDS = ("sampled", "greedy", "grammar", "choose")


class Pick(BaseModel):
    who: Literal["Akira", "Yuki", "Mika"]


def story(n: int) -> str:
    places = ("mill", "well", "bakery", "chapel", "bridge", "orchard", "forge")
    return " ".join(
        f"On night {i + 1}, {NAMES[i % 3]} heard a howl near the {places[i % 7]}."
        for i in range(n)
    )


QUESTIONS = (
    "Who is the werewolf?",
    "Whom should the village trust?",
    "Who is lying?",
    "Who should be watched tonight?",
    "Who saw the most?",
    "Whom do you accuse?",
)
# 24 prompts sharing prefixes of four lengths (3, 7, 12 and 12 + a twist sentence).
PROMPTS = [
    f"{story(n)}{twist} {q}"
    for n, twist in ((3, ""), (7, ""), (12, ""), (12, " Then the bell rang twice."))
    for q in QUESTIONS
]


def make_llm(model: str, cache_mb: float) -> LLM:
    backend = LocalBackend(model, prefix_cache_mb=cache_mb)
    return LLM(model, backend=backend, use_cache=False)


async def ask(llm: LLM, i: int) -> Any:
    prompt, kind = PROMPTS[i], KINDS[i % len(KINDS)]
    if kind == "sampled":
        return (await llm.generate(prompt, seed=i, temperature=0.9, max_tokens=8)).text
    if kind == "greedy":
        return (await llm.generate(prompt, temperature=0.0, max_tokens=8)).text
    if kind == "grammar":
        return (await llm.structured(prompt, Pick, seed=i, temperature=1.0, max_tokens=16)).raw
    return (await llm.choose(prompt, OPTIONS)).scores


def serve_in_order(llm: LLM, order: list[int]) -> dict[int, Any]:
    return {i: run_sync(ask(llm, i)) for i in order}


def engine_of(llm: LLM) -> LlamaEngine:
    backend = llm.backend
    assert isinstance(backend, LocalBackend)
    return backend.engine()


@pytest.fixture(scope="module")
def reference() -> tuple[dict[int, Any], UsageReport]:
    """Every prompt answered one at a time with reuse off."""
    off = make_llm(SMOL, 0)
    return serve_in_order(off, list(range(len(PROMPTS)))), off.usage


def test_outputs_are_identical_with_reuse_on_off_and_in_any_order(
    reference: tuple[dict[int, Any], UsageReport],
) -> None:
    expected, usage_off = reference
    # Reuse off: every generation evaluates its whole prompt; a choice evaluates its prompt
    # once, and again for each option longer than one token, with that option but its last.
    engine = engine_of(make_llm(SMOL, 0))
    evaluated_off = 0
    for i, prompt in enumerate(PROMPTS):
        text = engine.render_text(prompt)
        n = len(engine.tokens(text))
        evaluated_off += n
        if KINDS[i % len(KINDS)] == "choose":
            options = [engine.continuation_tokens(text, o) for o in OPTIONS]
            evaluated_off += sum(n + len(t) - 1 for t in options if len(t) > 1)
    assert usage_off.prompt_tokens_evaluated == evaluated_off
    assert len({str(v) for v in expected.values()}) > len(PROMPTS) // 2  # answers really vary

    on = make_llm(SMOL, 256)
    engine = engine_of(on)
    orders = {
        "as listed": list(range(len(PROMPTS))),
        "reversed": list(reversed(range(len(PROMPTS)))),
        "shuffled": random.Random(0).sample(range(len(PROMPTS)), len(PROMPTS)),
    }
    for name, order in orders.items():
        engine.prefix.clear()
        before = on.usage
        got = serve_in_order(on, order)
        assert got == expected, name
        after = on.usage
        requested = after.prompt_tokens - before.prompt_tokens
        evaluated = (after.prompt_tokens_evaluated or 0) - (before.prompt_tokens_evaluated or 0)
        assert requested == usage_off.prompt_tokens
        assert evaluated < 0.6 * requested, (name, evaluated, requested)  # reuse happened


def test_concurrent_requests_are_grouped_by_prefix_and_stay_identical(
    reference: tuple[dict[int, Any], UsageReport],
) -> None:
    """All 24 submitted at once, interleaving the four prefix groups: the queue serves each
    group together and the answers equal one-at-a-time serving with reuse off."""
    interleaved = [g * 6 + q for q in range(6) for g in range(4)]
    expected = reference[0]

    on = make_llm(SMOL, 128)
    engine = engine_of(on)
    engine.queue.served.clear()

    async def burst() -> list[Any]:
        return await asyncio.gather(*(ask(on, i) for i in interleaved))

    answers = asyncio.run(burst())
    assert dict(zip(interleaved, answers, strict=True)) == expected
    group_of = {engine.render_text(p): i // 6 for i, p in enumerate(PROMPTS)}
    groups = [group_of[key] for key in engine.queue.served]
    assert sorted(groups) == sorted(group_of.values())
    switches = sum(a != b for a, b in itertools.pairwise(groups))
    assert switches <= 6, groups  # grouped: far fewer switches than the 23 submitted


def last_logits(engine: LlamaEngine, tokens: list[int]) -> np.ndarray:
    engine.prefix.load(engine.llm, tokens[:-1])
    engine.llm.eval(tokens[-1:])
    return serial.last_logits(engine.llm, engine.llm.n_vocab())


def test_a_choice_scores_each_option_as_if_fed_from_a_reloaded_prompt() -> None:
    """Every option's first token is scored from the one distribution after the prompt and its
    later tokens from a reloaded prompt: the same float64 scores, bit for bit, as feeding each
    option token by token from its own reload, for options of one and of several tokens."""
    llm = make_llm(SMOL, 0)
    engine = engine_of(llm)
    backend = llm.backend
    assert isinstance(backend, LocalBackend)
    text = engine.render_text(f"{story(5)} Who is the werewolf?")
    options = ["Yes", "Yuki the baker", "Mika, who was at the mill", "No"]
    tokens = engine.tokens(text)
    want: dict[str, float] = {}
    for option in options:  # each option fed whole, one token a decode, from its own reload
        total, logits = 0.0, last_logits(engine, tokens)
        for token in engine.continuation_tokens(text, option):
            top = logits.max()
            total += float(logits[token] - (top + math.log(np.exp(logits - top).sum())))
            engine.llm.eval([token])
            logits = serial.last_logits(engine.llm, engine.llm.n_vocab())
        want[option] = total
    lengths = [len(engine.continuation_tokens(text, o)) for o in options]
    assert min(lengths) == 1 and max(lengths) >= 4
    got, usage = serial.score(engine, text, options)
    assert got == want
    assert usage.prompt_tokens == sum(len(tokens) + n for n in lengths)
    assert usage.prompt_tokens_evaluated == len(tokens) + sum(
        len(tokens) + n - 1 for n in lengths if n > 1)


@pytest.mark.parametrize("model", [SMOL, "local:gemma3-270m"])
def test_strict_prefix_and_divergence_inside_a_block_give_exact_logits(model: str) -> None:
    """Warm the cache with one long prompt, then ask for strict prefixes of it (ending inside a
    block and exactly at a block boundary), for prompts that diverge inside a block, and for the
    same prompt again. Each gives bit-identical logits to a fresh evaluation with reuse off and
    restores the longest cached prefix. Gemma's prompt is longer than its 512-token sliding
    window."""
    on = engine_of(make_llm(model, 256))
    on.prefix.clear()  # the engine may be shared with earlier tests in this process
    restores_before = on.prefix.stats.restores
    off = engine_of(make_llm(model, 0))
    long_text = story(60 if "gemma" in model else 14)
    tokens = on.tokens(on.render_text(long_text))
    assert len(tokens) > (560 if "gemma" in model else 200)
    n = len(tokens)
    fork = 5 * BLOCK + 20 if "gemma" in model else 2 * BLOCK + 20  # inside a block
    crow = on.llm.tokenize(b" A crow flew over the roofs at dawn.", add_bos=False)
    owl = on.llm.tokenize(b" An owl sat on the chapel roof.", add_bos=False)
    cases = {
        "warm-up": tokens,
        "strict prefix, inside a block": tokens[: n - 40],
        "strict prefix, block boundary": tokens[: 2 * BLOCK + 1],
        "diverges inside a block": tokens[: n - 70] + crow,
        "first sibling off the fork": tokens[:fork] + crow + tokens[fork:],
        "second sibling off the fork": tokens[:fork] + owl + tokens[fork:],
        "same prompt again": tokens,
    }
    evaluated_by: dict[str, int] = {}
    for name, case in cases.items():
        head = case[:-1]
        keys = block_keys(head)
        cached = max((k for k in range(1, len(keys) + 1) if keys[k - 1] in on.prefix._states),
                     default=0)
        tail = tail_key(head, keys)
        expected = 0 if tail in on.prefix._states else len(head) - cached * BLOCK
        evaluated_before = on.prefix.stats.tokens_evaluated
        got = last_logits(on, case)
        evaluated = on.prefix.stats.tokens_evaluated - evaluated_before
        want = last_logits(off, case)
        assert np.array_equal(got, want), name
        assert evaluated == expected, name  # the longest cached prefix was restored
        evaluated_by[name] = evaluated
    # the first sibling saved the block where it left the warm-up prompt; the second used it
    second = cases["second sibling off the fork"]
    assert evaluated_by["second sibling off the fork"] == len(second) - 1 - fork // BLOCK * BLOCK
    assert evaluated_by["same prompt again"] == 0  # the exact tail state
    assert evaluated_by["strict prefix, block boundary"] == 0  # block 2, a checkpoint
    assert all(evaluated_by[name] < len(case) // 2 for name, case in cases.items()
               if "prefix" in name or "diverges" in name)
    assert on.prefix.stats.restores - restores_before == len(cases) - 1


def test_the_lru_bound_holds() -> None:
    on = engine_of(make_llm(SMOL, 6))  # room for a few block states of a few MB each
    bound = on.prefix.max_bytes
    for i in range(10):
        text = f"Case {i}. " + story(8)  # distinct from the first block on: little reuse
        on.prefix.load(on.llm, on.tokens(on.render_text(text)))
        stored = sum(len(state) for state in on.prefix._states.values())
        assert stored == on.prefix.bytes <= bound
        assert len(on.prefix) >= 1
    assert on.prefix.stats.evictions > 0
    assert on.prefix.stats.peak_bytes <= bound
