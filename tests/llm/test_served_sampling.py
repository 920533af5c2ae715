"""A self-hosted `openai/` server (llama.cpp's) samples with the in-process backend's
parameters: llama-cpp-python's server defaults `repeat_penalty` to 1.1 where the in-process
chain uses 1.0. For the same request and seed, 0 of 16 README-job messages matched the
in-process ones with the server's defaults, 11 of 16 with these fields (docs/LOCAL.md, issue
25 item 4)."""

from __future__ import annotations

import inspect

import pytest

from gtsteer.llm import LLM
from gtsteer.llm.backends.litellm_backend import LLAMA_CPP_SAMPLING
from gtsteer.testing import LoopbackServer


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_the_sent_sampling_is_the_in_process_chain() -> None:
    """The in-process backend samples with `create_completion`'s defaults (it passes none of
    these fields), so the fields sent are those defaults, read from llama-cpp-python itself."""
    llama_cpp = pytest.importorskip("llama_cpp")
    defaults = inspect.signature(llama_cpp.Llama.create_completion).parameters
    assert {k: defaults[k].default for k in LLAMA_CPP_SAMPLING} == LLAMA_CPP_SAMPLING


def test_an_openai_compatible_server_gets_llama_cpp_sampling_seed_and_stops() -> None:
    with LoopbackServer() as server:
        llm = LLM("openai/smollm2", api_base=server.base_url, api_key="no-key", use_cache=False)
        llm.generate_sync("Name a day.", seed=7, temperature=0.7, max_tokens=9, stop=["\nBob:"])
        body = server.bodies[-1]
    assert {k: body.get(k) for k in ("top_k", "top_p", "min_p", "repeat_penalty", "seed",
                                     "temperature", "max_tokens", "stop")} == {
        "top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0, "seed": 7,
        "temperature": 0.7, "max_tokens": 9, "stop": ["\nBob:"]}


def test_other_providers_keep_their_own_sampling() -> None:
    with LoopbackServer() as server:
        LLM("hosted_vllm/m", api_base=server.base_url, use_cache=False).generate_sync("Hi.")
        body = server.bodies[-1]
    assert not {"top_k", "min_p", "repeat_penalty", "top_p"} & set(body)


def test_the_sampling_is_part_of_the_cache_key_of_such_servers() -> None:
    """Answers cached before this change were sampled with the server's defaults: not reused."""
    llama = LLM("openai/smollm2", api_base="http://127.0.0.1:8080/v1", api_key="no-key")
    openai = LLM("openai/gpt-4o-mini", api_key="sk-test")
    assert llama.backend.identity()["sampling"] == LLAMA_CPP_SAMPLING
    assert "sampling" not in openai.backend.identity()
