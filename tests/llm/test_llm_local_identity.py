"""The local backend's cache identity: every answer cached for an embedded model is stored under
the same four fields, and building the key loads no model (a rerun whose answers are all cached
never touches llama.cpp). The engine is a stand-in that fails if it is loaded."""

from __future__ import annotations

import pytest

from gtsteer.llm import LLM
from gtsteer.llm.backends.local import LocalBackend
from gtsteer.llm.types import GenerationRequest

REQUEST = GenerationRequest(prompt="Alice offers Bob two apples.", seed=3, max_tokens=8)


def backend(model: str) -> LocalBackend:
    """A backend whose engine may not be loaded."""
    b = LocalBackend(model, threads=1)

    def engine() -> None:
        raise AssertionError("identity() loaded the model")

    b.engine = engine  # type: ignore[method-assign,assignment]
    return b


def key(b: LocalBackend) -> str:
    return LLM(b.model, backend=b, use_cache=False)._key("text", REQUEST)


def test_the_identity_keeps_the_keys_made_before() -> None:
    """Every cached answer of an embedded model was stored under this identity; a field added
    here would orphan all of them."""
    assert backend("local:smollm2-135m").identity() == {
        "backend": "local",
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "prompting": "chat",
        "eval": "blocks64",
    }
    assert backend("local:gemma3-270m").identity() == {
        "backend": "local",
        "model": "gemma-3-270m-q4_k_m.gguf",
        "prompting": "completion",
        "eval": "blocks64",
    }


@pytest.mark.parametrize("model", ["local", "local:smollm2-135m", "local:gemma3-270m",
                                   "local:qwen2.5-coder-0.5b"])
def test_the_key_is_built_without_loading_the_model(model: str) -> None:
    assert len(key(backend(model))) == 64


def test_a_key_is_the_one_made_before_the_batch_engine_was_removed() -> None:
    """SmolLM2's key for REQUEST as computed at commit 63715f7 (one at a time, the default):
    the answers cached then are found now."""
    assert key(backend("local:smollm2-135m")) == (
        "9c44651be6255c65984a2811c36723fd06602ee3c7f5c0d2df31817fd0647940")


def test_the_default_model_shares_its_name_s_key() -> None:
    """`local` is SmolLM2 today: its answers are the ones cached under `local:smollm2-135m`."""
    assert key(backend("local")) == key(backend("local:smollm2-135m"))


def test_the_backend_class_lives_in_the_package_itself() -> None:
    """A Ray driver recognises a built-in backend by its class's module and rebuilds it on the
    worker from the model string (gtsteer/runs/ray_pool.py), so `LocalBackend` is defined in
    `gtsteer.llm.backends.local` itself, not in one of its modules."""
    assert LocalBackend.__module__ == "gtsteer.llm.backends.local"
