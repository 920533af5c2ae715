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


def make_backend(
    model: str,
    api_base: str | None = None,
    timeout_s: float = 120.0,
    api_key: str | None = None,
    threads: int | None = None,
    api_mode: str = "chat",
) -> Backend:
    """Choose a backend from a model string (see DESIGN.md, "The LLM layer"); `threads` sets
    an in-process model's threads (default: `local_threads()`), e.g. a Ray worker's CPUs."""
    model = (model or "").strip()
    if not model:
        raise ModelConfigError(
            "Empty model string. Use `local`, `fake`, or e.g. `openai/gpt-4o-mini`."
        )
    if (api_base or api_key or api_mode != "chat") and (
        model in ("local", "fake") or model.startswith(("local:", "fake:"))
    ):
        raise ModelConfigError(
            f"--api-base/--api-key-env/--api-mode apply to served models (litellm ids such as "
            f"openai/NAME or hosted_vllm/NAME), not to {model!r}, which runs in-process."
        )
    if model == "local" or model.startswith("local:"):
        from gtsteer.llm.backends.local import LocalBackend

        return LocalBackend(model, threads=threads)
    if model == "fake" or model.startswith("fake:"):
        return FakeBackend(model)
    from gtsteer.llm.backends.litellm_backend import LiteLLMBackend

    return LiteLLMBackend(model, api_base=api_base, timeout_s=timeout_s, api_key=api_key,
                          api_mode=api_mode)


__all__ = ["BACKEND_KINDS", "Backend", "FakeBackend", "make_backend"]
