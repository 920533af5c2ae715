"""Every non-local model goes through litellm (OpenAI, Anthropic, Ollama, vLLM, ...).

litellm is imported lazily (about 5 s). Keys come only from the environment; litellm's own
retries are off because the client owns backoff, so that every try is metered.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.cache import public_url
from gtsteer.llm.errors import LLMCallError, ModelConfigError, TransientLLMError
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

# Providers that run without a key (local servers).
_KEYLESS_PROVIDERS = {"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile"}


def _litellm() -> Any:
    # litellm fetches its cost map from the internet at import unless told to use its bundled copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider that ignores `seed` should not fail the call
    return litellm


class LiteLLMBackend(Backend):
    kind = "litellm"
    max_concurrency = 16

    def __init__(self, model: str, api_base: str | None = None, timeout_s: float = 120.0):
        super().__init__(model)
        self.api_base = api_base
        self.timeout_s = timeout_s
        litellm = _litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
        except Exception as exc:
            raise ModelConfigError(
                f"Unknown model string {model!r}. Use `local` (the embedded Gemma 3 270M), "
                "`local:/path/model.gguf`, `fake` (offline test double), or a litellm model such "
                "as `openai/gpt-4o-mini`, `anthropic/claude-3-5-haiku-latest`, "
                "`ollama_chat/llama3.1` or `hosted_vllm/NAME` with --api-base."
            ) from exc
        self.provider = provider
        if provider not in _KEYLESS_PROVIDERS and not api_base:
            env = litellm.validate_environment(model=model)
            missing = env.get("missing_keys") or []
            if missing:
                raise ModelConfigError(
                    f"Model {model!r} needs the environment variable {', '.join(missing)}, which "
                    "is not set. Export it (gtsteer never stores keys), or pick another model."
                )

    def identity(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.model, "api_base": public_url(self.api_base)}

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        litellm = _litellm()
        messages = (
            [m.model_dump() for m in request.messages]
            if request.messages is not None
            else [{"role": "user", "content": request.prompt}]
        )
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "timeout": self.timeout_s,
            "num_retries": 0,
        }
        if request.stop:
            kwargs["stop"] = request.stop
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": json_schema.get("title", "answer"), "schema": json_schema},
            }
        start = time.perf_counter()
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise _classify(exc) from exc
        latency = time.perf_counter() - start
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # noqa: BLE001 - a model missing from the cost map costs "unknown" -> 0
            cost = 0.0
        return RawCompletion(
            text=text,
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                cost_usd=cost,
                latency_s=latency,
            ),
        )


_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")
_SECRET_PARAM = re.compile(r"(?i)\b((?:api[-_]?)?key|token|secret|password|sig)=[^&\s'\"]+")
_KEY_SHAPED = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}")


def scrub_secrets(text: str) -> str:
    """Remove credentials from provider error text before it reaches logs or result files.

    Providers echo request URLs and sometimes keys in their errors; those messages end up in
    stderr, ExpansionReport.reason and results/*.json, so they are cleaned at the one place
    errors leave the backend.
    """
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(("_API_KEY", "_TOKEN", "_SECRET", "_KEY")):
            text = text.replace(value, "***")
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    text = _SECRET_PARAM.sub(lambda m: f"{m.group(1)}=***", text)
    return _KEY_SHAPED.sub(lambda m: f"{m.group(1)}-***", text)


def _classify(exc: Exception) -> Exception:
    """Map litellm/OpenAI exceptions to retryable or final gtsteer errors (secrets scrubbed)."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    detail = scrub_secrets(str(exc))[:300]
    transient_names = {
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "APIConnectionError",
        "Timeout",
        "APITimeoutError",
        "BadGatewayError",
    }
    if name in transient_names or (isinstance(status, int) and (status == 429 or status >= 500)):
        return TransientLLMError(f"{name} (status {status}): {detail}")
    if name == "AuthenticationError":
        return ModelConfigError(
            "The provider rejected the API key (authentication error). Check the key in your "
            "environment."
        )
    return LLMCallError(f"{name} (status {status}): {detail}")
