"""Parts of the local backend that need no model: model strings, block keys, the LRU policy's
arithmetic, the prefix-ordered queue and the environment settings."""

from __future__ import annotations

import asyncio
import threading

import pytest

from gtsteer.llm import ModelConfigError
from gtsteer.llm.backends.local.models import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    parse_local_model,
)
from gtsteer.llm.backends.local.prefix_cache import (
    BLOCK,
    BlockPrefixCache,
    block_keys,
    cache_bytes_from_env,
    is_checkpoint,
)
from gtsteer.llm.backends.local.worker import PrefixOrderedQueue, common_prefix_len


def test_model_strings_name_the_embedded_models() -> None:
    default = parse_local_model("local")
    assert default.embedded is EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL]
    gemma = parse_local_model("local:gemma3-270m")
    smol = parse_local_model("local:smollm2-135m")
    assert (gemma.chat, smol.chat) == (False, True)
    assert gemma.label != smol.label  # the label goes into the response-cache key
    small = parse_local_model("local:qwen2.5-coder-0.5b")
    large = parse_local_model("local:qwen2.5-coder-1.5b")
    assert small.chat and large.chat and small.path is None  # joined only on first use
    assert len({gemma.label, smol.label, small.label, large.label}) == 4


def test_an_unknown_local_model_names_the_choices(tmp_path) -> None:
    with pytest.raises(ModelConfigError) as info:
        parse_local_model("local:llama-70b")
    message = str(info.value)
    assert "local:smollm2-135m" in message and "local:gemma3-270m" in message
    assert "local:qwen2.5-coder-0.5b" in message and "local:qwen2.5-coder-1.5b" in message
    assert "llama-70b" in message
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    choice = parse_local_model(f"local:{gguf}")
    assert choice.path == gguf and choice.chat is None and choice.label == "mine.gguf"


def test_block_keys_identify_the_whole_prefix() -> None:
    tokens = list(range(3 * BLOCK + 5))
    keys = block_keys(tokens)
    assert len(keys) == 3
    assert block_keys(tokens[: 2 * BLOCK]) == keys[:2]  # a prefix has the same keys
    changed = tokens.copy()
    changed[3] = -1  # a change in the first block changes every later key
    assert all(a != b for a, b in zip(block_keys(changed), keys, strict=True))
    changed = tokens.copy()
    changed[2 * BLOCK + 1] = -1
    assert block_keys(changed)[:2] == keys[:2] and block_keys(changed)[2] != keys[2]


def test_checkpoints_thin_out_two_per_doubling() -> None:
    assert [k for k in range(1, 50) if is_checkpoint(k)] == [
        1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48
    ]


def test_cache_size_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_LOCAL_PREFIX_CACHE_MB", "0")
    assert cache_bytes_from_env() == 0
    assert not BlockPrefixCache(cache_bytes_from_env()).enabled
    monkeypatch.setenv("GTSTEER_LOCAL_PREFIX_CACHE_MB", "12.5")
    assert cache_bytes_from_env() == int(12.5 * 2**20)
    monkeypatch.setenv("GTSTEER_LOCAL_PREFIX_CACHE_MB", "lots")
    with pytest.raises(ModelConfigError, match="GTSTEER_LOCAL_PREFIX_CACHE_MB"):
        cache_bytes_from_env()


def test_thread_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from gtsteer.llm.backends.local import local_threads

    monkeypatch.setenv("GTSTEER_LOCAL_THREADS", "3")
    assert local_threads() == 3
    monkeypatch.setenv("GTSTEER_LOCAL_THREADS", "0")
    with pytest.raises(ModelConfigError, match="GTSTEER_LOCAL_THREADS"):
        local_threads()
    monkeypatch.delenv("GTSTEER_LOCAL_THREADS")
    assert 1 <= local_threads() <= 64


def test_common_prefix_len() -> None:
    assert common_prefix_len("abcdef", "abcxyz") == 3
    assert common_prefix_len("abc", "abc") == 3
    assert common_prefix_len("abc", "abcd") == 3
    assert common_prefix_len("", "abc") == 0
    assert common_prefix_len("xbc", "abc") == 0


def test_queue_serves_shared_prefixes_together_and_returns_each_result() -> None:
    """While the first job runs, jobs from two scenarios arrive interleaved; the queue then
    serves each scenario's jobs one after another, and every caller gets its own result."""
    queue = PrefixOrderedQueue()
    release = threading.Event()

    async def scenario() -> list[str]:
        first = asyncio.create_task(queue.run("A: start", lambda: release.wait(5) and "A: start"))
        await asyncio.sleep(0.05)  # the worker is now blocked inside the first job
        keys = [f"{'AB'[i % 2]}: step {i}" for i in range(8)]
        tasks = [asyncio.create_task(queue.run(k, lambda k=k: k)) for k in keys]
        await asyncio.sleep(0.05)
        release.set()
        results = await asyncio.gather(first, *tasks)
        assert results == ["A: start", *keys]
        return list(queue.served)

    served = asyncio.run(scenario())
    assert served[0] == "A: start"
    groups = [key[0] for key in served]
    assert groups == ["A"] * 5 + ["B"] * 4  # grouped, though submitted A, B, A, B, ...
    assert served[1:5] == sorted(served[1:5])  # ties served first come, first served


def test_queue_hands_exceptions_to_the_caller() -> None:
    queue = PrefixOrderedQueue()

    def fail() -> None:
        raise ValueError("bad prompt")

    async def scenario() -> None:
        with pytest.raises(ValueError, match="bad prompt"):
            await queue.run("x", fail)
        assert await queue.run("y", lambda: 7) == 7  # the worker survived

    asyncio.run(scenario())
