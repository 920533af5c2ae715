"""The persistent response cache: hits, misses, failures, killed writers, several processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Literal

import diskcache
import pytest
from pydantic import BaseModel

from gtsteer.llm import (
    LLM,
    Backend,
    GenerationRequest,
    LLMCallError,
    LLMCalls,
    RawCompletion,
    ResponseCache,
    TransientLLMError,
)
from gtsteer.llm.cache import cache_key, public_url


class Vote(BaseModel):
    who: Literal["Akira", "Yuki"]


class Verdict(BaseModel):
    guilty: bool


class FlakyBackend(Backend):
    """Raises the queued errors first, then answers; counts every call."""

    kind = "flaky"

    def __init__(self, errors: list[Exception]):
        super().__init__("flaky-1")
        self.errors = list(errors)
        self.calls = 0

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return RawCompletion(text=f"answer #{self.calls} to {request.as_text()[:20]}")


def _run(code: str, *args: str) -> subprocess.Popen[str]:
    """Start a Python child with this test's environment (and so its GTSTEER_CACHE_DIR)."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def test_second_identical_call_is_a_hit_with_no_new_call() -> None:
    llm = LLM("fake")
    first = llm.generate_sync("Propose a trade.", seed=1, temperature=0.5, max_tokens=20)
    second = llm.generate_sync("Propose a trade.", seed=1, temperature=0.5, max_tokens=20)
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text
    assert second.usage == first.usage  # the original usage is replayed, not re-metered
    usage = llm.usage
    assert (usage.requests, usage.cache_hits, usage.new_calls) == (2, 1, 1)
    assert len(llm.cache) == 1


def test_usage_since_counts_only_the_calls_in_between() -> None:
    llm = LLM("fake")
    llm.generate_sync("Open the meeting.", seed=1, max_tokens=20)
    before = llm.usage
    llm.generate_sync("Open the meeting.", seed=1, max_tokens=20)  # a hit
    llm.generate_sync("Close the meeting.", seed=1, max_tokens=20)  # a new call
    calls = llm.usage.since(before)
    assert (calls.requests, calls.cache_hits, calls.new_calls) == (2, 1, 1)
    total = sum([calls, calls], LLMCalls())
    assert (total.requests, total.cache_hits, total.new_calls) == (4, 2, 2)


BASE: dict[str, Any] = {"seed": 1, "temperature": 0.5, "max_tokens": 20}


@pytest.mark.parametrize(
    ("model", "prompt", "params"),
    [
        ("fake", "Propose a trade.", {**BASE, "seed": 2}),
        ("fake", "Propose a trade.", {**BASE, "temperature": 0.6}),
        ("fake:other", "Propose a trade.", BASE),
        ("fake", "Propose a trade!", BASE),
        ("fake", "Propose a trade.", {**BASE, "max_tokens": 21}),
        ("fake", "Propose a trade.", {**BASE, "stop": ["\n"]}),
    ],
    ids=["seed", "temperature", "model", "prompt", "max_tokens", "stop"],
)
def test_any_change_is_a_miss(model: str, prompt: str, params: dict[str, Any]) -> None:
    LLM("fake").generate_sync("Propose a trade.", **BASE)
    llm = LLM(model)
    result = llm.generate_sync(prompt, **params)
    assert result.cached is False
    assert (llm.usage.new_calls, llm.usage.cache_hits) == (1, 0)
    assert len(llm.cache) == 2


def test_schema_is_part_of_the_key() -> None:
    llm = LLM("fake")
    llm.structured_sync("Decide.", Vote, seed=3)
    assert llm.structured_sync("Decide.", Vote, seed=3).cached is True
    other = llm.structured_sync("Decide.", Verdict, seed=3)
    assert other.cached is False
    assert isinstance(other.value, Verdict)
    assert (llm.usage.new_calls, llm.usage.cache_hits) == (2, 1)


def test_text_structured_and_choice_keys_do_not_collide() -> None:
    llm = LLM("fake")
    llm.generate_sync("Decide.", seed=0, temperature=0.0)
    assert llm.structured_sync("Decide.", Vote, seed=0).cached is False
    assert llm.choose_sync("Decide.", ["Akira", "Yuki"]).cached is False
    assert llm.choose_sync("Decide.", ["Akira", "Yuki"]).cached is True
    assert len(llm.cache) == 3


def test_a_failed_call_is_not_cached() -> None:
    backend = FlakyBackend([LLMCallError("provider said no")])
    llm = LLM("flaky", backend=backend)
    with pytest.raises(LLMCallError, match="provider said no"):
        llm.generate_sync("Hello", seed=0)
    assert len(llm.cache) == 0
    ok = llm.generate_sync("Hello", seed=0)
    assert ok.cached is False and ok.text.startswith("answer #2")
    assert llm.generate_sync("Hello", seed=0).cached is True
    assert backend.calls == 2
    assert (llm.usage.failures, llm.usage.new_calls, llm.usage.cache_hits) == (1, 1, 1)


def test_transient_errors_exhausted_are_not_cached() -> None:
    backend = FlakyBackend([TransientLLMError("busy")] * 3)
    llm = LLM("flaky", backend=backend, max_retries=2, backoff_initial_s=0.001)
    with pytest.raises(LLMCallError) as info:
        llm.generate_sync("Hello")
    assert info.value.attempts == 3
    assert "busy" in str(info.value)
    assert len(llm.cache) == 0
    assert llm.generate_sync("Hello").text.startswith("answer #4")


def test_cache_persists_across_instances_and_processes(isolated_cache: Path) -> None:
    child = _run(
        """
        import json
        from gtsteer.llm import LLM
        c = LLM("fake").generate_sync("Persist me", seed=11)
        print(json.dumps({"text": c.text, "cached": c.cached}))
        """
    )
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    written = json.loads(out.strip().splitlines()[-1])
    assert written["cached"] is False
    assert (isolated_cache / "responses").is_dir()

    again = LLM("fake").generate_sync("Persist me", seed=11)
    assert again.cached is True
    assert again.text == written["text"]
    # A second fresh instance (new ResponseCache handle) in this process also hits.
    assert LLM("fake").generate_sync("Persist me", seed=11).cached is True


WRITER = """
    import sys
    from gtsteer.llm import ResponseCache
    cache = ResponseCache(sys.argv[1])
    i = 0
    while True:
        cache.set(f"k{i}", {"i": i, "text": "x" * 4000, "tail": "end"})
        print(i, flush=True)
        i += 1
"""


def test_a_killed_writer_leaves_a_usable_cache(tmp_path: Path) -> None:
    directory = tmp_path / "killed"
    writer = _run(WRITER, str(directory))
    assert writer.stdout is not None
    written = -1
    deadline = time.monotonic() + 60
    while written < 300 and time.monotonic() < deadline:
        line = writer.stdout.readline()
        assert line, writer.stderr.read() if writer.stderr else "writer died"
        written = int(line)
    os.kill(writer.pid, signal.SIGKILL)  # mid-way through its endless loop
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    assert written >= 300

    # Every stored row is complete JSON, and every acknowledged write is there.
    raw = diskcache.Cache(str(directory))
    keys = list(raw.iterkeys())
    assert len(keys) >= written + 1
    for key in keys:
        value = json.loads(raw[key])
        assert value["text"] == "x" * 4000 and value["tail"] == "end"
        assert key == f"k{value['i']}"
    raw.close()

    cache = ResponseCache(directory)
    assert cache.get(f"k{written}") == {"i": written, "text": "x" * 4000, "tail": "end"}
    cache.set("after-kill", {"ok": True})
    assert cache.get("after-kill") == {"ok": True}
    llm = LLM("fake", cache=cache)
    assert llm.generate_sync("still works").cached is False
    assert llm.generate_sync("still works").cached is True


def test_two_processes_write_one_cache_at_once(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    code = """
        import sys
        from gtsteer.llm import ResponseCache
        cache = ResponseCache(sys.argv[1])
        for i in range(200):
            cache.set(f"{sys.argv[2]}-{i}", {"who": sys.argv[2], "i": i})
    """
    children = [_run(code, str(directory), name) for name in ("a", "b")]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    cache = ResponseCache(directory)
    assert len(cache) == 400
    assert cache.get("a-199") == {"who": "a", "i": 199}
    assert cache.get("b-0") == {"who": "b", "i": 0}


def test_key_is_canonical_and_urls_lose_credentials() -> None:
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": [1, 2], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2})
    assert public_url("http://user:pw@host:8000/v1?key=abc#frag") == "http://host:8000/v1"
    assert public_url(None) is None


def test_use_cache_false_never_touches_the_cache(isolated_cache: Path) -> None:
    llm = LLM("fake", use_cache=False)
    assert llm.generate_sync("x").cached is False
    assert llm.generate_sync("x").cached is False
    assert llm.usage.new_calls == 2
    assert not (isolated_cache / "responses").exists()


def test_an_empty_cache_passed_in_is_the_one_used(tmp_path: Path, isolated_cache: Path) -> None:
    """An empty ResponseCache is falsy (it has __len__); it must not fall back to the default."""
    mine = ResponseCache(tmp_path / "mine")
    assert len(mine) == 0
    llm = LLM("fake", cache=mine)
    assert llm.cache is mine
    llm.generate_sync("goes to my cache")
    assert len(mine) == 1
    assert not (isolated_cache / "responses").exists()
