"""Every non-local model goes through litellm (OpenAI, Anthropic, Ollama, vLLM, ...).

litellm is imported lazily (about 5 s). Keys come from the environment (or a variable named by
`--api-key-env`) and never enter the cache key; litellm's own retries are off because the
client owns backoff, so that every try is metered.

Servers differ in what they accept (docs/SERVING.md): structured output is sent as a JSON
schema, else as `json_object` with the schema (llama.cpp's server), else as a plain prompt that
the client validates and retries with feedback. The mode is learned once per endpoint: the
first structured request probes it alone, and a rejection that names `response_format` costs
that one request, never a retry per call.

`api_mode="completions"` (a served base model) sends each request to `/v1/completions` as the
plain text prompt (`GenerationRequest.as_text`, no chat template) through litellm's
`atext_completion`; structured output then travels in the prompt (the client's schema hint and
validation) and `choose` reads the completion's top log-probabilities. The mode is part of the
cache key: the two routes' answers never mix.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import os
import re
import threading
import time
import weakref
from typing import Any
from urllib.parse import urlsplit

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.cache import public_url
from gtsteer.llm.errors import (
    LLMCallError,
    LLMError,
    MalformedResponseError,
    ModelConfigError,
    TransientLLMError,
)
from gtsteer.llm.secrets import register_secret, scrub_secrets, scrub_values
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

#: The key sent to an OpenAI-compatible server when none is given (gtsteer.llm.secrets knows it).
NO_KEY = "no-key"
# Providers that run without a key (local servers).
_KEYLESS_PROVIDERS = {"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile"}


def _litellm() -> Any:
    # litellm fetches its cost map from the internet at import unless told to use its bundled copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider that ignores `seed` should not fail the call
    return litellm


#: Structured-output modes, most constrained first; each endpoint uses the first it accepts.
STRUCTURED_MODES = ("json_schema", "json_object", "prompt")
#: Alternatives the server's top log-probabilities are read from in `score_options`.
TOP_LOGPROBS = 20
#: The same on `/v1/completions`, whose `logprobs` OpenAI caps at 5.
COMPLETION_LOGPROBS = 5
#: How requests reach a served model: chat messages (`/v1/chat/completions`, the default) or a
#: plain text prompt (`/v1/completions`, for base models).
API_MODES = ("chat", "completions")
# A rejection of the structured-output request itself (not of the prompt or the key).
_REJECTS_FORMAT = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)


class EndpointModes:
    """What one endpoint (model + base URL) was found to accept, shared by every client of
    it in the process, so each capability is probed once per endpoint, not once per `LLM`."""

    def __init__(self) -> None:
        self.structured: str | None = None  # one of STRUCTURED_MODES once known
        self.logprobs: bool | None = None  # does the chat endpoint return top_logprobs?
        # The probe runs alone: concurrent first requests wait for its verdict (one lock
        # per event loop, as asyncio locks bind to the loop that made them).
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
        self._locks = weakref.WeakKeyDictionary()

    def probe_lock(self) -> asyncio.Lock:
        return self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())


#: create_completion's sampling defaults (llama-cpp-python 0.3.x), which the in-process backend
#: samples with (tests/llm/test_served_sampling.py reads them from llama-cpp-python), sent to
#: self-hosted `openai/` servers: their fields `top_k`, `min_p`, `repeat_penalty` are llama.cpp's
#: (llama-server and llama-cpp-python's server).
LLAMA_CPP_SAMPLING: dict[str, float] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05,
                                        "repeat_penalty": 1.0}
_ENDPOINTS: dict[tuple[str, str | None], EndpointModes] = {}
_ENDPOINTS_LOCK = threading.Lock()


def endpoint_modes(model: str, api_base: str | None) -> EndpointModes:
    with _ENDPOINTS_LOCK:
        return _ENDPOINTS.setdefault((model, public_url(api_base)), EndpointModes())


def response_format(mode: str, json_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The `response_format` a `mode` sends (None: the schema travels in the prompt only)."""
    if mode == "json_schema":
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(json_schema.get("title", "answer")))[:64]
        return {"type": "json_schema", "json_schema": {"name": name, "schema": json_schema}}
    if mode == "json_object":  # llama.cpp's server turns the schema into a grammar
        return {"type": "json_object", "schema": json_schema}
    return None


def check_api_base(api_base: str | None, sends_key: bool) -> None:
    """Refuse, before anything is sent, a base URL no request can succeed with: another
    scheme than http(s), no host, or credentials in it where a key goes as the Authorization
    header too (`sends_key`: httpx refuses the two together, on every try)."""
    if not api_base:
        return
    parts = urlsplit(api_base)
    shown = public_url(api_base)
    if parts.scheme not in ("http", "https"):
        raise ModelConfigError(f"--api-base {shown}: the scheme must be http or https, got"
                               f" {parts.scheme or 'none'!r}")
    if not parts.hostname:
        raise ModelConfigError(f"--api-base {shown}: no host in the URL")
    if sends_key and (parts.username is not None or parts.password is not None):
        raise ModelConfigError(
            f"--api-base {shown}: the URL holds credentials (user:password@), which are never"
            " sent; put the key in an environment variable and name it with --api-key-env")


class LiteLLMBackend(Backend):
    kind = "litellm"
    max_concurrency = 16

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        timeout_s: float = 120.0,
        api_key: str | None = None,
        api_mode: str = "chat",
    ):
        super().__init__(model)
        if api_mode not in API_MODES:
            raise ModelConfigError(f"--api-mode: expected one of {', '.join(API_MODES)}, got"
                                   f" {api_mode!r}")
        self.api_mode = api_mode
        self.api_base = api_base
        self.timeout_s = timeout_s
        self._api_key = api_key  # sent with each request; never part of identity()
        register_secret(api_key)  # and scrubbed from every error and answer text
        litellm = _litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
        except Exception as exc:
            raise ModelConfigError(
                f"Unknown model string {model!r}. Use `local` (the default embedded model, "
                "SmolLM2-135M-Instruct), "
                "`local:/path/model.gguf`, `fake` (offline test double), `module:Class` (a "
                "Backend of your own), or a litellm model such as `openai/gpt-4o-mini`, "
                "`anthropic/claude-3-5-haiku-latest`, "
                "`ollama_chat/llama3.1` or `hosted_vllm/NAME` with --api-base."
            ) from exc
        self.provider = provider
        if (api_key is None and api_base and provider == "openai"
                and not os.environ.get("OPENAI_API_KEY")):
            # An OpenAI-compatible server without auth (llama.cpp, vLLM) still needs the SDK
            # to hold some key, or every try fails; this placeholder is what their docs send.
            self._api_key = api_key = NO_KEY
        # The OpenAI SDK always sends a key (the environment's, or the placeholder no-key).
        check_api_base(api_base, sends_key=api_key is not None or provider == "openai")
        self.modes = endpoint_modes(model, api_base)
        if self.completions:
            self.modes = EndpointModes()  # nothing to probe: the schema goes in the prompt
            self.modes.structured = "prompt"
        if provider not in _KEYLESS_PROVIDERS and not api_base and not api_key:
            env = litellm.validate_environment(model=model)
            missing = env.get("missing_keys") or []
            if missing:
                raise ModelConfigError(
                    f"Model {model!r} needs the environment variable {', '.join(missing)}, which "
                    "is not set. Export it (gtsteer never stores keys), or pick another model."
                )

    @property
    def llama_cpp_compatible(self) -> bool:
        """An `openai/` model at an `--api-base` other than OpenAI's own: a self-hosted
        OpenAI-compatible server (llama.cpp's), which takes llama.cpp's sampling fields."""
        host = urlsplit(self.api_base).hostname if self.api_base else None
        return self.model.startswith("openai/") and host is not None and host != "api.openai.com"

    @property
    def completions(self) -> bool:
        return self.api_mode == "completions"

    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.kind, "model": self.model,
                               "api_base": public_url(self.api_base)}
        if self.completions:  # another route, other answers (chat keys stay as they were)
            out["api_mode"] = self.api_mode
        if self.llama_cpp_compatible:  # answers sampled with other parameters than before
            out["sampling"] = LLAMA_CPP_SAMPLING
        return out

    def capabilities(self) -> dict[str, str | None]:
        choice = {True: "loglik", False: "constrained", None: None}[self.modes.logprobs]
        return {"structured_output": self.modes.structured, "choice": choice}

    def _kwargs(self, request: GenerationRequest) -> dict[str, Any]:
        messages = (
            [m.model_dump() for m in request.messages]
            if request.messages is not None
            else [{"role": "user", "content": request.prompt}]
        )
        said: dict[str, Any] = ({"prompt": request.as_text()} if self.completions
                                else {"messages": messages})
        kwargs: dict[str, Any] = {
            "model": self.model,
            **said,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "timeout": self.timeout_s,
            "num_retries": 0,
        }
        if request.stop:
            kwargs["stop"] = request.stop
        if self.llama_cpp_compatible:
            # The in-process backend's sampling; llama-cpp-python's server would otherwise
            # apply its own default repeat_penalty 1.1 (docs/LOCAL.md, served vs in-process).
            kwargs["top_p"] = LLAMA_CPP_SAMPLING["top_p"]
            kwargs["extra_body"] = {k: v for k, v in LLAMA_CPP_SAMPLING.items() if k != "top_p"}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        return kwargs

    def prepare(self) -> None:
        _litellm()

    def price(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        try:
            prompt, completion = _litellm().cost_per_token(
                model=self.model, prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens)
        except Exception:  # noqa: BLE001 - a model missing from the cost map: cost unknown
            return None
        return float(prompt) + float(completion)

    def estimate_tokens(self, text: str, request: GenerationRequest | None = None) -> int | None:
        litellm = _litellm()
        try:
            if request is not None and request.messages is not None and not self.completions:
                messages = [m.model_dump(include={"role", "content"}) for m in request.messages]
                return int(litellm.token_counter(model=self.model, messages=messages))
            return int(litellm.token_counter(model=self.model, text=text))
        except Exception:  # noqa: BLE001 - no tokenizer for it: the caller's rule of thumb
            return None

    async def _send(self, kwargs: dict[str, Any]) -> tuple[Any, Usage]:
        litellm = _litellm()
        start = time.perf_counter()
        try:
            send = litellm.atext_completion if self.completions else litellm.acompletion
            response = await send(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every provider error is classified
            # `from None`: litellm's exception quotes the request (its headers, the key) and
            # would print with any traceback; its scrubbed text travels as `provider_text`.
            raise _classify(exc, self.api_base) from None
        latency = time.perf_counter() - start
        usage = getattr(response, "usage", None)
        try:
            cost, priced = float(litellm.completion_cost(completion_response=response) or 0.0), True
        except Exception:  # noqa: BLE001 - a model missing from the cost map: cost unknown
            cost, priced = 0.0, False
        return response, Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cost_usd=cost,
            priced=priced,
            latency_s=latency,
        )

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        kwargs = self._kwargs(request)
        answer = None
        if json_schema is None:
            answer = await self._send(kwargs)
        elif self.modes.structured is None:
            async with self.modes.probe_lock():
                if self.modes.structured is None:  # else found while this request waited
                    answer = await self._probe_structured(kwargs, json_schema)
        if answer is None:  # the mode is known: requests go out concurrently again
            assert json_schema is not None and self.modes.structured is not None
            answer = await self._send_structured(kwargs, json_schema, self.modes.structured)
        response, usage = answer
        text = self._text_of(response)
        # A server that quotes the key in its answer must not get it into the cache.
        return RawCompletion(text=scrub_values(text), usage=usage)

    def _malformed(self, what: str) -> MalformedResponseError:
        where = public_url(self.api_base) or self.provider
        return MalformedResponseError(f"malformed response from {self.model} at {where}: {what}")

    def _first_choice(self, response: Any) -> Any:
        choices = getattr(response, "choices", None)
        if not choices:
            raise self._malformed("the answer has no choices (`\"choices\": []`)")
        return choices[0]

    def _text_of(self, response: Any) -> str:
        """The first choice's message text (its `text` on `/v1/completions`); a choice without
        a message, or whose content is null where text was asked for, is a malformed answer
        (not an empty one)."""
        if self.completions:
            text = getattr(self._first_choice(response), "text", None)
            if not isinstance(text, str):
                raise self._malformed("the first choice has no text")
            return text
        message = getattr(self._first_choice(response), "message", None)
        if message is None:
            raise self._malformed("the first choice has no message")
        content = getattr(message, "content", None)
        if content is None:
            raise self._malformed("the message's content is null")
        if not isinstance(content, str):
            raise self._malformed(f"the message's content is a {type(content).__name__}, not text")
        return content

    async def _send_structured(
        self, kwargs: dict[str, Any], json_schema: dict[str, Any], mode: str
    ) -> tuple[Any, Usage]:
        fmt = response_format(mode, json_schema)
        return await self._send({**kwargs, "response_format": fmt} if fmt else kwargs)

    async def _probe_structured(
        self, kwargs: dict[str, Any], json_schema: dict[str, Any]
    ) -> tuple[Any, Usage]:
        """Try the modes in order; the first the server accepts is this endpoint's mode."""
        for mode in STRUCTURED_MODES:
            try:
                answer = await self._send_structured(kwargs, json_schema, mode)
            except (TransientLLMError, LLMCallError) as exc:
                # the provider's whole text, not the 300-char cut
                said = f"{exc} {exc.provider_text}"
                if mode != "prompt" and _REJECTS_FORMAT.search(said):
                    continue  # the server named the format it refuses: try the next mode
                raise
            self.modes.structured = mode
            return answer
        raise AssertionError("unreachable: the prompt mode sends no response_format")

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        """First-token log-probabilities of the options, read from the server's chat
        `top_logprobs`; None where the endpoint returns none (then the client asks for a
        constrained choice) or where its top alternatives cannot tell the options apart."""
        if self.modes.logprobs is False:
            return None, Usage()
        asked = request.with_note("Answer with exactly one of: " + ", ".join(options) + ".")
        kwargs = {**self._kwargs(asked), "max_tokens": 1, "temperature": 0.0}
        response, usage = await self._send(
            {**kwargs, "logprobs": COMPLETION_LOGPROBS} if self.completions
            else {**kwargs, "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        )
        try:
            choice = self._first_choice(response)
            top = _text_top_logprobs(choice) if self.completions else _top_logprobs(choice)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self._malformed(f"its logprobs cannot be read ({type(exc).__name__}:"
                                  f" {exc})") from None
        self.modes.logprobs = top is not None
        if top is None:
            return None, usage
        return first_token_scores(top, options), usage


def _top_logprobs(choice: Any) -> dict[str, float] | None:
    """`{token: logprob}` of the first generated token, or None when the server sent none;
    a KeyError/TypeError/ValueError when an entry lacks `token` or `logprob`."""
    content = _get(getattr(choice, "logprobs", None), "content")
    if not content:
        return None
    first = content[0]
    first = first if isinstance(first, dict) else first.model_dump()
    if not isinstance(first, dict):
        raise TypeError(f"logprobs content entry is a {type(first).__name__}")
    top = {str(t["token"]): float(t["logprob"]) for t in first.get("top_logprobs") or []}
    top.setdefault(str(first["token"]), float(first["logprob"]))
    return top


def _text_top_logprobs(choice: Any) -> dict[str, float] | None:
    """`{token: logprob}` of the first token of a `/v1/completions` choice (its `logprobs`:
    `top_logprobs`, one mapping per token), or None when the server sent none."""
    top = _get(getattr(choice, "logprobs", None), "top_logprobs")
    if not top or not top[0]:
        return None
    return {str(token): float(lp) for token, lp in dict(top[0]).items()}


def _get(logprobs: Any, name: str) -> Any:
    """A field of a `logprobs` block, which arrives as a dict or as an SDK object (or None)."""
    return logprobs.get(name) if isinstance(logprobs, dict) else getattr(logprobs, name, None)


def first_token_scores(top: dict[str, float], options: list[str]) -> dict[str, float] | None:
    """Each option scores the log-probability of the likeliest top token that starts it
    (case and leading space ignored). None when no option is among the top tokens, or two
    options share their best token (the server's answer does not separate them). An option
    absent from the top scores the smallest top log-probability, an upper bound on its own."""
    floor = min(top.values())
    scores: dict[str, float] = {}
    best_token: dict[str, str] = {}
    for option in options:
        wanted = option.strip().lower()
        matches = [
            (lp, tok) for tok, lp in top.items()
            if tok.strip() and wanted.startswith(tok.strip().lower())
        ]
        if matches:
            lp, tok = max(matches)
            scores[option], best_token[option] = lp, tok.strip().lower()
    if not scores or len(set(best_token.values())) < len(best_token):
        return None
    return {o: scores.get(o, floor if math.isfinite(floor) else -1e9) for o in options}


def _retry_after(exc: Exception) -> float | None:
    """Seconds from the error response's `Retry-After` header (delta-seconds or HTTP date)."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if not headers:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps (litellm wraps the OpenAI SDK's error, which wraps httpx's...)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain) and len(chain) < 12:
        chain.append(current)
        current = (current.__cause__ or current.__context__
                   or getattr(current, "original_exception", None))
    return chain


def _http_status(chain: list[BaseException]) -> int | None:
    """The status of an HTTP response the server really sent: litellm labels a refused
    connection or an unparsable body "status 500" too, but only then is there no SDK status
    error (`openai.APIStatusError`) in the chain."""
    for cause in chain:
        if type(cause).__module__.startswith("openai") and hasattr(cause, "status_code"):
            return int(cause.status_code)
    return None


def _what_happened(exc: Exception, chain: list[BaseException], where: str) -> tuple[str, bool]:
    """A short label of the failure and whether another try can succeed."""
    names = {type(c).__name__ for c in chain}
    status = _http_status(chain)
    if "ConnectionRefusedError" in names:
        return f"connection refused by {where} (is the server running?)", True
    if names & {"APITimeoutError", "Timeout", "ReadTimeout", "ConnectTimeout", "TimeoutError"}:
        return "the server did not answer in time", True
    if status is None and "JSONDecodeError" in names:
        return "malformed response: the body is not valid JSON", True
    if status is None and "Empty or invalid response" in str(exc):
        return "malformed response: the body is not a chat completion (a proxy's page?)", True
    if status is None and names & {"APIConnectionError", "ServerDisconnectedError", "ReadError",
                                   "RemoteProtocolError", "ClientConnectorError", "ConnectError"}:
        return f"the connection closed before an answer ({where})", True
    code = status if status is not None else getattr(exc, "status_code", None)
    if status is not None and status == 429:
        return "rate limited (HTTP 429)", True
    if status is not None and status >= 500:
        return f"server error (HTTP {status})", True
    name = type(exc).__name__
    transient = name in {"RateLimitError", "ServiceUnavailableError", "BadGatewayError"} or (
        isinstance(code, int) and (code == 429 or code >= 500))
    return f"{name} (status {code})", transient


def _classify(exc: Exception, api_base: str | None = None) -> Exception:
    """Map litellm/OpenAI exceptions to retryable or final gtsteer errors (secrets scrubbed),
    labelled with what happened (refused, timed out, a broken body, the server's own HTTP
    status), not with litellm's class name and the 500 it gives every client-side failure."""
    full = scrub_secrets(str(exc))
    detail = full[:300]
    chain = _causes(exc)
    where = (urlsplit(api_base).netloc.rpartition("@")[2] if api_base else None) or "the server"
    what, transient = _what_happened(exc, chain, where)
    error: LLMError
    if type(exc).__name__ == "AuthenticationError":
        error = ModelConfigError(
            "The provider rejected the API key (authentication error). Check the key in your "
            "environment."
        )
    elif transient:
        error = TransientLLMError(f"{what}: {detail}", _retry_after(exc))
    else:
        error = LLMCallError(f"{what}: {detail}")
    error.provider_text = full
    return error
