"""LLM backends and the model-string registry."""

from __future__ import annotations

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.backends.fake import FakeBackend
from gtsteer.llm.errors import ModelConfigError

BACKEND_KINDS = (
    "local",
    "local:gemma3-270m",
    "local:smollm2-135m",
    "local:/path/model.gguf",
    "fake",
    "<provider>/<model> via litellm",
)


def make_backend(model: str, api_base: str | None = None, timeout_s: float = 120.0) -> Backend:
    """Choose a backend from a model string (see DESIGN.md, "The LLM layer")."""
    model = (model or "").strip()
    if not model:
        raise ModelConfigError("Empty model string. Use `local`, `fake`, or e.g. `openai/gpt-4o-mini`.")
    if model == "local" or model.startswith("local:"):
        from gtsteer.llm.backends.local import LocalBackend

        return LocalBackend(model)
    if model == "fake" or model.startswith("fake:"):
        return FakeBackend(model)
    from gtsteer.llm.backends.litellm_backend import LiteLLMBackend

    return LiteLLMBackend(model, api_base=api_base, timeout_s=timeout_s)


__all__ = ["BACKEND_KINDS", "Backend", "FakeBackend", "make_backend"]
