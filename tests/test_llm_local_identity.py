"""The local backend's cache identity names the weight layout that answers: a batched engine
that reloaded its weights unrepacked answers differently from llama.cpp's default (repacked)
layout, so the two must not share cached answers. The engine's start-up probe is injected here
(a stand-in engine with its `repacked` result), so no model is loaded; the real probe is
checked against the real models in tests/test_llm_local_batch.py (slow)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gtsteer.llm import LLM
from gtsteer.llm.backends.local import LocalBackend
from gtsteer.llm.types import GenerationRequest

REQUEST = GenerationRequest(prompt="Alice offers Bob two apples.", seed=3, max_tokens=8)


@dataclass
class ProbedEngine:
    """What identity() reads of a loaded engine: whether its weights stayed repacked."""

    repacked: bool


def backend(model: str, batch: int, repacked: bool | None) -> LocalBackend:
    """A backend whose engine reports `repacked` (None: loading the engine is an error)."""
    b = LocalBackend(model, batch=batch, threads=1)

    def engine() -> ProbedEngine:
        if repacked is None:
            raise AssertionError("identity() loaded the model")
        return ProbedEngine(repacked)

    b.engine = engine  # type: ignore[method-assign,assignment]
    return b


def key(b: LocalBackend) -> str:
    return LLM(b.model, backend=b, use_cache=False)._key("text", REQUEST)


@pytest.mark.parametrize("model", ["local:gemma3-270m", "local:qwen2.5-coder-0.5b"])
def test_unrepacked_batched_weights_get_their_own_key(model: str) -> None:
    """Gemma 3 and Qwen 0.5B at B = 8 reload unrepacked (docs/LOCAL.md): not B = 1's answers."""
    one = backend(model, 1, None)
    batched = backend(model, 8, repacked=False)
    assert key(batched) != key(one)
    assert batched.identity()["weights"] == "unrepacked"
    # two batch sizes on the unrepacked weights answer alike (B = 8 and B = 5): one key
    assert key(backend(model, 5, repacked=False)) == key(batched)


def test_the_same_layout_shares_the_key_whatever_the_batch() -> None:
    """A batched engine that kept the repacked weights (SmolLM2 at any B; Gemma at B = 3;
    a model served one at a time after both probes failed) answers as B = 1 does."""
    for model in ("local:smollm2-135m", "local:gemma3-270m"):
        one = backend(model, 1, None)
        for batch in (3, 8):
            assert key(backend(model, batch, repacked=True)) == key(one)


def test_the_default_layout_keeps_the_keys_made_before_it_was_keyed() -> None:
    """Every cached answer of the repacked layout (all of SmolLM2's, every B = 1 answer) was
    stored under this identity; naming the layout only when unrepacked keeps them valid."""
    assert backend("local:smollm2-135m", 8, repacked=True).identity() == {
        "backend": "local",
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "prompting": "chat",
        "eval": "blocks64",
    }
    assert "weights" not in backend("local:gemma3-270m", 1, None).identity()
