"""Novel tokens: the tokens of a call that no earlier call held as a prefix, the fewest any
serving of the same calls must evaluate (`python -m lab profile`'s floor)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from gtsteer.llm import LLM
from gtsteer.llm.backends.local import LocalBackend, counting_tokens
from gtsteer.llm.backends.local.prefix_cache import BLOCK, BlockPrefixCache, NovelTokens
from gtsteer.llm.client import run_sync
from gtsteer.llm.types import Usage
from gtsteer.llm.usage import UsageMeter, UsageReport


def test_a_sequence_counts_only_the_tokens_past_every_earlier_prefix() -> None:
    trie = NovelTokens()
    assert trie.add([1, 2, 3]) == 3
    assert trie.add([1, 2, 4, 5]) == 2  # branches after [1, 2]
    assert trie.add([1, 2]) == 0  # a prefix of both
    assert trie.add([1, 2, 3]) == 0  # the same again
    assert trie.add([7]) == 1
    assert trie.nodes == 6


class Evaluations:
    """The two calls `BlockPrefixCache.load` makes of a llama.cpp model when reuse is off."""

    def __init__(self) -> None:
        self.evaluated = 0

    def reset(self) -> None:
        pass

    def eval(self, tokens: list[int]) -> None:
        self.evaluated += len(tokens)


def test_the_block_floor_is_what_an_unbounded_cache_would_evaluate() -> None:
    """A cache saving every block and every exact prompt: a prompt again costs nothing, one
    leaving a known prompt inside its third block re-evaluates from that block's start, a
    mid-block prefix of a known prompt evaluates its partial block (a full block's state is not
    its state), a block-aligned one nothing, and one that shares no block evaluates all. With
    reuse off every load evaluates everything."""
    cache, model = BlockPrefixCache(0), Evaluations()
    cache.count_floor(True)
    first = list(range(2 * BLOCK + 22))
    loads = [(first, 2 * BLOCK + 22), (first, 0), (first[: 2 * BLOCK + 10] + [-1] * 5, 15),
             (first[: BLOCK + 7], 7), (first[: 2 * BLOCK], 0), ([-2] * (BLOCK + 3), BLOCK + 3)]
    for tokens, floor in loads:
        cache.load(model, tokens)
        assert cache.floor_last == floor
    assert model.evaluated == sum(len(tokens) for tokens, _ in loads)
    cache.count_floor(False)
    cache.load(model, first)
    assert cache.floor_last is None


def test_the_meter_sums_novel_tokens_and_leaves_them_unknown_when_none_is_reported() -> None:
    meter = UsageMeter()
    meter.call(Usage(prompt_tokens=10))
    assert meter.snapshot().tokens_novel is None
    before = meter.snapshot()
    meter.call(Usage(prompt_tokens=10, tokens_novel=4))
    meter.call(Usage(prompt_tokens=10, tokens_novel=3))
    assert meter.snapshot().tokens_novel == 7
    assert meter.snapshot().minus(before).tokens_novel == 7
    total = UsageReport()
    total.add(meter.snapshot().minus(before))
    total.add(UsageReport(tokens_novel=5))
    assert total.tokens_novel == 12
    # A Ray worker's report comes home whole: plain counters and the optional ones.
    meter.absorb(UsageReport(requests=2, new_calls=2, prompt_tokens=30, tokens_novel=5))
    home = meter.snapshot()
    assert (home.requests, home.new_calls, home.prompt_tokens) == (2, 5, 60)
    assert home.tokens_novel == 12 and home.prompt_tokens_evaluated is None


PROMPT = "Alice and Bob pick a day to meet. Alice: How about Monday? Bob:"
OPTIONS = ["Yes", "No, Tuesday suits me better"]


def counted_calls(cache_mb: float) -> tuple[list[int | None], UsageReport]:
    """Four answers and a choice, counted: each call's novel tokens (the choice's last) and
    the meter."""
    backend = LocalBackend("local:smollm2-135m", prefix_cache_mb=cache_mb)
    llm = LLM("local:smollm2-135m", backend=backend, use_cache=False)
    novel = []
    for seed, temperature in ((1, 0.9), (2, 0.9), (3, 0.0), (4, 0.0)):
        completion = run_sync(llm.generate(PROMPT, seed=seed, temperature=temperature,
                                           max_tokens=10))
        novel.append(completion.usage.tokens_novel)
        assert completion.usage.completion_tokens == 10  # nothing stopped early
        # Of them generated: all 9 evaluated first; after it the prompt is known.
        assert completion.usage.tokens_novel_generated == (
            9 if seed == 1 else completion.usage.tokens_novel)
    before = llm.usage
    run_sync(llm.choose(PROMPT, OPTIONS))
    novel.append(llm.usage.minus(before).tokens_novel)
    assert llm.usage.minus(before).tokens_novel_generated == 0  # a choice generates nothing
    # A known prompt: its block floor is the one-token decodes generation does not count. A stop
    # at max_tokens leaves the last counted token undecoded (none beyond); `decided` drops a
    # sampled token that was never counted, after decoding every counted one (one beyond).
    at_max = run_sync(llm.generate(PROMPT, seed=5, temperature=0.9, max_tokens=6)).usage
    early = run_sync(llm.generate(PROMPT, seed=5, temperature=0.9, max_tokens=6,
                                  end_rule="three", decided=lambda text: len(text) >= 3)).usage
    assert at_max.completion_tokens == 6 and at_max.prompt_tokens_block_floor == 0
    assert early.completion_tokens < 6 and early.prompt_tokens_block_floor == 1
    novel += [at_max.tokens_novel, early.tokens_novel]
    return novel, llm.usage


@pytest.mark.slow
def test_novel_tokens_count_what_the_context_held_and_not_how_it_was_served() -> None:
    """On SmolLM2: a first call's novel tokens are its prompt and every generated token but the
    last sampled (never evaluated); a greedy answer asked again adds none; a choice on a known
    prompt adds only its multi-token option's tokens. The count is the calls', not the
    serving's: the same with prefix reuse off and on."""
    with counting_tokens():
        novel, usage = counted_calls(cache_mb=40)
        off, usage_off = counted_calls(cache_mb=0)
        engine = LocalBackend("local:smollm2-135m", prefix_cache_mb=40).engine()
        text = engine.render_text(PROMPT)
        prompt_tokens = len(engine.tokens(text))
        option_tokens = len(engine.continuation_tokens(text, OPTIONS[1]))
    assert engine.novel is None and engine.prefix.floor_last is None  # stopped with the block
    assert novel[0] == prompt_tokens + 10 - 1
    assert 0 < novel[1] <= 10 - 1  # shares the prompt, and perhaps a first word
    assert 0 < novel[2] <= 10 - 1 and novel[3] == 0  # a greedy answer, then the same again
    assert option_tokens > 2 and 1 <= novel[4] <= option_tokens - 1  # "Yes": one token, none
    assert usage.tokens_novel == sum(novel)
    assert off == novel and usage_off.tokens_novel == usage.tokens_novel
    # The bit-for-bit floor is the calls' too, and this cache reaches it. Evaluated counts each
    # of the 6 completions' last prompt token; the floor only the one `decided` call's decode
    # beyond its completion tokens.
    assert usage_off.prompt_tokens_block_floor == usage.prompt_tokens_block_floor
    assert usage.prompt_tokens_block_floor == usage.prompt_tokens_evaluated - 6 + 1
    assert usage_off.prompt_tokens_evaluated > usage.prompt_tokens_evaluated


def test_engines_count_only_inside_a_counting_block() -> None:
    """No model is loaded for this: the switch is read by engines as they load."""
    from gtsteer.llm.backends.local import engine as local_engine

    assert local_engine._counting is False
    with counting_tokens():
        assert local_engine._counting is True
    assert local_engine._counting is False


def test_one_token_decodes_beyond_the_completion_tokens() -> None:
    from gtsteer.llm.backends.local.serial import _beyond_completion

    # 10 prompt tokens, 5 counted completion tokens:
    assert _beyond_completion(10, 14, 5) == 0  # max_tokens or a stop string: the 5th undecoded
    assert _beyond_completion(10, 15, 5) == 1  # end-of-generation or `decided`: all 5 decoded


class StubEngine:
    """What `counting_tokens` uses of a loaded engine."""

    def __init__(self) -> None:
        self.queue = SimpleNamespace(running=threading.Lock())
        self.switched: list[bool] = []

    def count_tokens(self, on: bool) -> None:
        assert self.queue.running.locked()  # never under a request
        self.switched.append(on)


def test_counting_switches_loaded_engines_on_then_off_and_does_not_nest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gtsteer.llm.backends.local import engine as local_engine

    stub = StubEngine()
    monkeypatch.setitem(local_engine._engines, ("stub",), stub)
    with counting_tokens():
        assert stub.switched == [True]
        with pytest.raises(RuntimeError, match="already counting"), counting_tokens():
            pass
        assert local_engine._counting is True  # the refused block left it on
    assert stub.switched == [True, False] and local_engine._counting is False

