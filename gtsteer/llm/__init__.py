"""gtsteer.llm: every call to a language model passes through here.

    from gtsteer.llm import LLM
    llm = LLM("fake")            # or "local", "local:/path.gguf", "openai/gpt-4o-mini"
    llm.generate_sync("Say hi", seed=1).text
    llm.structured_sync(prompt, MyModel).value
    llm.choose_sync(prompt, ["yes", "no"]).choice
"""

from gtsteer.llm.backends import Backend, FakeBackend, in_process, make_backend
from gtsteer.llm.cache import CacheError, ResponseCache, StorageError, default_cache_dir
from gtsteer.llm.client import LLM, as_llm, model_string, run_sync
from gtsteer.llm.errors import (
    LLMCallError,
    LLMError,
    MalformedResponseError,
    MissingExtraError,
    ModelConfigError,
    PromptTooLongError,
    StructuredOutputError,
    TransientLLMError,
)
from gtsteer.llm.types import (
    ChoiceResult,
    Completion,
    GenerationRequest,
    Message,
    RawCompletion,
    Structured,
    Usage,
)
from gtsteer.llm.usage import LLMCalls, UsageMeter, UsageReport

__all__ = [
    "LLM",
    "Backend",
    "CacheError",
    "ChoiceResult",
    "Completion",
    "FakeBackend",
    "GenerationRequest",
    "LLMCallError",
    "LLMCalls",
    "LLMError",
    "MalformedResponseError",
    "Message",
    "MissingExtraError",
    "ModelConfigError",
    "PromptTooLongError",
    "RawCompletion",
    "ResponseCache",
    "StorageError",
    "Structured",
    "StructuredOutputError",
    "TransientLLMError",
    "Usage",
    "UsageMeter",
    "UsageReport",
    "as_llm",
    "default_cache_dir",
    "in_process",
    "make_backend",
    "model_string",
    "run_sync",
]
