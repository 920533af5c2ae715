"""Typed errors of the LLM layer. Each message says what to do, in one paragraph."""

from __future__ import annotations


class LLMError(Exception):
    """Base class for every error raised by gtsteer.llm."""

    #: A served model's whole error text, credentials scrubbed (the message keeps 300
    #: characters of it); the provider's exception itself is not chained, as it quotes the key.
    provider_text: str = ""


class ModelConfigError(LLMError):
    """The model string, key, or local model file is unusable; nothing was sent."""


class PromptTooLongError(LLMError):
    """The prompt does not fit the model's context window."""

    def __init__(self, prompt_tokens: int, context: int, max_tokens: int):
        self.prompt_tokens = prompt_tokens
        self.context = context
        super().__init__(
            f"The prompt is {prompt_tokens} tokens but the local model's context is {context} "
            f"tokens and {max_tokens} more are reserved for the answer. Shorten the prompt, "
            "lower --max-tokens, or set GTSTEER_LOCAL_CTX to a larger context."
        )


class TransientLLMError(LLMError):
    """A failure worth retrying: rate limit, server error, timeout, dropped connection.

    `retry_after_s` is the wait the server asked for (a 429's `Retry-After`), if any."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        self.retry_after_s = retry_after_s
        super().__init__(message)


class MalformedResponseError(TransientLLMError):
    """A served model answered 200 with a body that is no usable completion (no choices, a
    null message, log-probabilities without values): retried, as a proxy or a server under
    load sends such bodies now and then; the message names what was missing."""


class LLMCallError(LLMError):
    """A call failed for good (after retries, or with a non-retryable error)."""

    def __init__(self, message: str, attempts: int = 1):
        self.attempts = attempts
        super().__init__(message)


class StructuredOutputError(LLMError):
    """The model never produced a valid object; carries the last raw output and the problems."""

    def __init__(self, schema_name: str, attempts: int, last_raw: str, problems: list[str]):
        self.schema_name = schema_name
        self.attempts = attempts
        self.last_raw = last_raw
        self.problems = problems
        shown = last_raw if len(last_raw) <= 300 else last_raw[:300] + "..."
        super().__init__(
            f"No valid {schema_name} after {attempts} attempts. Last problems: "
            f"{'; '.join(problems) or 'none recorded'}. Last raw output: {shown!r}"
        )


class MissingExtraError(LLMError, ImportError):
    """A command needs an optional part of gtsteer (an extra: `local`, `imitate`, `web`,
    `ray`, `gambit`) that is not installed; the message names the pip line that adds it."""

    def __init__(self, extra: str, what: str, alternative: str = ""):
        self.extra = extra
        super().__init__(f"{what} needs the `{extra}` extra, which is not installed:"
                         f" pip install 'gtsteer[{extra}]'{alternative}")
