"""`local`: llama.cpp in-process (llama-cpp-python) on a GGUF file.

Model strings: `local` (the default embedded model, `DEFAULT_LOCAL_MODEL`), `local:gemma3-270m`
(Gemma 3 270M, a base model), `local:smollm2-135m` (SmolLM2-135M-Instruct, a chat model) or
`local:/path/model.gguf` (a chat model when its GGUF carries a chat template). Base models read
the prompt as text to continue; chat models read it as the user's turn of their chat template.

Every prompt is evaluated in fixed token blocks through `BlockPrefixCache`, which restores the
longest already-computed block prefix, so the same inputs give the same output whatever ran
before, with or without reuse. Requests queue on the one llama.cpp context in
`PrefixOrderedQueue`, which serves those sharing a prefix one after another. Structured output
is constrained by llama.cpp's JSON-schema grammar, checked first against the sampled token only
(see `llama_sampling`).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import json
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.backends.chat_prompt import ChatTemplate, has_chat_template
from gtsteer.llm.backends.local_models import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    parse_local_model,
)
from gtsteer.llm.backends.prefix_cache import BLOCK, BlockPrefixCache, cache_bytes_from_env
from gtsteer.llm.backends.prefix_queue import PrefixOrderedQueue
from gtsteer.llm.errors import LLMCallError, ModelConfigError, PromptTooLongError
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

DEFAULT_CTX = 4096
THREADS_ENV = "GTSTEER_LOCAL_THREADS"
MAX_DEFAULT_THREADS = 8
_engines: dict[tuple, LlamaEngine] = {}
_engines_lock = threading.Lock()


def default_model_path() -> Path:
    """The default embedded model's GGUF (assembled once into the model dir)."""
    return EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL].locate()


def local_threads() -> int:
    """GTSTEER_LOCAL_THREADS, else one fewer than the usable cores, at least 1 and at most 8.

    llama.cpp's worker threads spin while they wait for each other, so a thread that loses its
    core to another busy process stalls all of them (20x slower measured on 2 cores). Leaving a
    core free keeps one competing process from hitting that cliff, and on 2 cores a second
    thread bought little even when idle (2 threads vs 1: prefill 468 vs 490 tokens/s,
    generation 58 vs 49; docs/BENCHMARKS.md). Models this small gain little beyond 8 threads."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ModelConfigError(f"{THREADS_ENV}={raw!r} must be a whole number >= 1.")
        return int(raw)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_DEFAULT_THREADS, (cores or 1) - 1))


class LlamaEngine:
    """One loaded GGUF: the llama.cpp context, how it is prompted, its prefix cache and queue."""

    def __init__(self, path: Path, n_ctx: int, threads: int, cache_bytes: int, chat: bool | None):
        try:
            # `Llama` with llama.cpp's grammar-check-the-sampled-token-first sampling.
            from gtsteer.llm.backends.llama_sampling import FastGrammarLlama
        except ImportError as exc:
            raise ModelConfigError(
                "llama-cpp-python is not installed. Run `make setup`, which builds it with "
                'CMAKE_ARGS="-DGGML_NATIVE=OFF" (about 10 minutes).'
            ) from exc
        self.path = path
        self.threads = threads
        self.n_ctx = n_ctx
        self.llm = FastGrammarLlama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_batch=512,  # >= BLOCK: every block is one llama_decode
            n_threads=threads,
            n_threads_batch=threads,
            swa_full=True,  # SWA layers keep every cell: restored states lay out as fresh
            verbose=False,
        )
        self.chat = has_chat_template(self.llm) if chat is None else chat
        self.template = ChatTemplate(self.llm) if self.chat else None
        self.prefix = BlockPrefixCache(cache_bytes)
        self.queue = PrefixOrderedQueue(f"gtsteer-llama-{path.name}")

    def render(self, request: GenerationRequest) -> str:
        return self.template.render(request) if self.template else request.as_text()

    def render_text(self, prompt: str) -> str:
        return self.render(GenerationRequest(prompt=prompt))

    def tokens(self, text: str) -> list[int]:
        """The prompt's tokens, as llama-cpp-python's completion and chat paths tokenize them."""
        if self.template:
            return self.llm.tokenize(text.encode(), add_bos=False, special=True)
        return self.llm.tokenize(text.encode(), add_bos=True, special=True)

    def continuation_tokens(self, prompt: str, option: str) -> list[int]:
        sep = "" if self.template or prompt.endswith((" ", "\n")) else " "
        return self.llm.tokenize((sep + option).encode(), add_bos=False, special=False)

    def close(self) -> None:
        # The queue's worker is a daemon thread: at exit (Ctrl-C mid-request) it may still be
        # inside llama.cpp, and freeing the model under it would crash; leaking is harmless.
        if not self.queue.running.acquire(timeout=10):
            return
        try:
            self.prefix.clear()
            self.llm.close()
        finally:
            self.queue.running.release()


def engine_for(
    path: Path, n_ctx: int, threads: int, cache_bytes: int, chat: bool | None
) -> LlamaEngine:
    key = (str(path), n_ctx, threads, cache_bytes, chat)
    with _engines_lock:
        if key not in _engines:
            _engines[key] = LlamaEngine(path, n_ctx, threads, cache_bytes, chat)
        return _engines[key]


def engine_stats() -> list[dict[str, Any]]:
    """Prefix-cache counters of every loaded model (benchmarks and `llm info` read them)."""
    with _engines_lock:
        engines = list(_engines.values())
    return [
        {
            "model": e.path.name,
            "threads": e.threads,
            "bound_bytes": e.prefix.max_bytes,
            "cached_bytes": e.prefix.bytes,
            "cached_states": len(e.prefix),
            **dataclasses.asdict(e.prefix.stats),
        }
        for e in engines
    ]


@atexit.register
def close_engines() -> None:
    """Free llama.cpp models while the interpreter is intact.

    Left to `Llama.__del__` at interpreter teardown, llama-cpp-python prints an
    "Exception ignored ... TypeError" traceback after every run that used the local model."""
    with _engines_lock:
        for engine in _engines.values():
            with contextlib.suppress(Exception):
                engine.close()
        _engines.clear()


@dataclass
class GenerateJob:
    """One completion: prompt tokens, sampling settings and the per-request stop rules."""

    tokens: list[int]
    seed: int
    temperature: float
    max_tokens: int
    stop: list[str]
    grammar: Any = None  # a LlamaGrammar, or None


@dataclass
class ScoreJob:
    """One `choose`: the prompt and each option's continuation tokens."""

    tokens: list[int]
    options: list[str]
    option_tokens: list[list[int]]


def log_softmax(logits: Any) -> Any:
    """Log-probabilities from float64 logits, max-shifted: how `choose` turns llama.cpp's
    logits into an option token's log-likelihood."""
    import numpy as np

    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


def _last_logits(llm: Any, n_vocab: int) -> Any:
    """Logits of the last evaluated position, copied out of llama.cpp's buffer."""
    import llama_cpp
    import numpy as np

    pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(n_vocab,)).astype(np.float64)


class LocalBackend(Backend):
    kind = "local"
    # Requests wait in the engine's prefix-ordered queue (one llama.cpp context serves one at a
    # time); letting many in at once is what lets the queue group those sharing a prefix.
    max_concurrency = 256
    supports_grammar = True
    cancellable = False  # a llama.cpp call in a worker thread cannot be stopped

    def __init__(
        self,
        model: str = "local",
        *,
        prefix_cache_mb: float | None = None,
        threads: int | None = None,
    ):
        super().__init__(model)
        self.choice = parse_local_model(model)
        self.n_ctx = int(os.environ.get("GTSTEER_LOCAL_CTX", DEFAULT_CTX))
        self.threads = threads or local_threads()
        self.cache_bytes = (
            cache_bytes_from_env() if prefix_cache_mb is None else int(prefix_cache_mb * 2**20)
        )
        self.load_seconds: float | None = None

    @property
    def path(self) -> Path | None:
        return self.choice.path

    def engine(self) -> LlamaEngine:
        start = time.perf_counter()
        path = self.choice.resolve_path()  # assembling the Gemma GGUF takes a few seconds
        engine = engine_for(path, self.n_ctx, self.threads, self.cache_bytes, self.choice.chat)
        if self.load_seconds is None:
            self.load_seconds = time.perf_counter() - start
        return engine

    def llama(self) -> Any:
        return self.engine().llm

    @property
    def chat(self) -> bool:
        if self.choice.chat is None:  # a user GGUF: decided by its metadata
            self.choice.chat = self.engine().chat
        return self.choice.chat

    def identity(self) -> dict[str, Any]:
        """What the response-cache key holds of this backend. Building it loads no model for
        an embedded one (its prompting kind is known): a rerun whose answers are all cached
        never touches llama.cpp."""
        return {
            "backend": self.kind,
            "model": self.choice.label,
            "prompting": "chat" if self.chat else "completion",
            "eval": f"blocks{BLOCK}",  # the batch split fixes the logits' low bits
        }

    def render(self, request: GenerationRequest) -> str:
        """The exact text the model reads for `request` (chat template applied for chat models)."""
        return self.engine().render(request)

    def context_window(self) -> int | None:
        return self.n_ctx

    def count_tokens(self, request: GenerationRequest) -> int | None:
        engine = self.engine()
        return len(engine.tokens(engine.render(request)))

    # ---- work done on the engine's thread ----------------------------------------------------

    def _complete_sync(
        self, engine: LlamaEngine, text: str, request: GenerationRequest, json_schema: dict | None
    ) -> RawCompletion:
        llm = engine.llm
        job = self._generate_job(engine, text, request, json_schema)
        tokens = job.tokens
        start = time.perf_counter()
        try:
            # The prompt but its last token goes through the block cache; llama-cpp-python then
            # finds it already in the context and evaluates only the last token itself.
            evaluated = engine.prefix.load(llm, tokens[:-1]) + 1
            out = llm.create_completion(
                tokens,
                max_tokens=job.max_tokens,
                temperature=job.temperature,
                seed=job.seed,
                stop=job.stop or None,
                grammar=job.grammar,
            )
        except Exception as exc:  # llama.cpp raises plain RuntimeError/ValueError
            raise LLMCallError(f"llama.cpp failed: {exc}") from exc
        assert isinstance(out, dict), "not streamed, so one response"
        usage = out.get("usage", {})
        return RawCompletion(
            text=out["choices"][0]["text"],
            usage=Usage(
                prompt_tokens=len(tokens),
                prompt_tokens_evaluated=evaluated,
                completion_tokens=usage.get("completion_tokens", 0),
                latency_s=time.perf_counter() - start,
            ),
        )

    def _score_sync(
        self, engine: LlamaEngine, text: str, options: list[str]
    ) -> tuple[dict[str, float], Usage]:
        llm = engine.llm
        job = self._score_job(engine, text, options)
        prompt_tokens = job.tokens
        n_vocab = llm.n_vocab()
        requested = sum(len(prompt_tokens) + len(t) for t in job.option_tokens)
        start = time.perf_counter()

        def at_prompt_end() -> int:
            """Load the prompt (its last token evaluated here, so its logits are llama.cpp's
            last ones); the tokens evaluated."""
            loaded = engine.prefix.load(llm, prompt_tokens[:-1])
            llm.eval(prompt_tokens[-1:])
            return loaded + 1

        # Without logits_all, llama-cpp-python 0.3.x leaves `llm.scores` unfilled, so logits
        # are read straight from llama.cpp after each eval. Every option's first token is
        # scored from the one distribution after the prompt; an option's later tokens need the
        # prompt reloaded and the option fed one token at a time, all but its last (whose own
        # logits are never read). The same evaluations, in the same order, as feeding each
        # option from a reloaded prompt: the same scores, with most of the decodes gone (the
        # reward model's one-token answers: one decode a choice instead of two an option).
        evaluated = at_prompt_end()
        after_prompt = log_softmax(_last_logits(llm, n_vocab))
        scores: dict[str, float] = {}
        for option, option_tokens in zip(options, job.option_tokens, strict=True):
            total = float(after_prompt[option_tokens[0]]) if option_tokens else 0.0
            if len(option_tokens) > 1:
                evaluated += at_prompt_end()
                for token, following in itertools.pairwise(option_tokens):
                    llm.eval([token])
                    evaluated += 1
                    total += float(log_softmax(_last_logits(llm, n_vocab))[following])
            scores[option] = total
        usage = Usage(
            prompt_tokens=requested,
            prompt_tokens_evaluated=evaluated,
            latency_s=time.perf_counter() - start,
        )
        return scores, usage

    # ---- async API ---------------------------------------------------------------------------

    async def _prepared(self, request: GenerationRequest) -> tuple[LlamaEngine, str]:
        import asyncio

        engine = await asyncio.to_thread(self.engine)  # loads the model on first use
        return engine, engine.render(request)

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        engine, text = await self._prepared(request)
        return await engine.queue.run(
            text, lambda: self._complete_sync(engine, text, request, json_schema)
        )

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        engine, text = await self._prepared(request)
        return await engine.queue.run(text, lambda: self._score_sync(engine, text, options))

    # ---- requests, checked on the engine's thread before anything is evaluated ---------------

    def _generate_job(
        self, engine: LlamaEngine, text: str, request: GenerationRequest, json_schema: dict | None
    ) -> GenerateJob:
        tokens = engine.tokens(text)
        if len(tokens) + request.max_tokens > self.n_ctx:
            raise PromptTooLongError(len(tokens), self.n_ctx, request.max_tokens)
        grammar = None
        if json_schema is not None:
            from llama_cpp import LlamaGrammar

            grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        stop = list(request.stop)
        if engine.template and engine.template.eos:
            stop.append(engine.template.eos)
        return GenerateJob(
            tokens=tokens,
            seed=request.seed,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            stop=stop,
            grammar=grammar,
        )

    def _score_job(self, engine: LlamaEngine, text: str, options: list[str]) -> ScoreJob:
        tokens = engine.tokens(text)
        option_tokens = [engine.continuation_tokens(text, option) for option in options]
        for continuation in option_tokens:
            if len(tokens) + len(continuation) > self.n_ctx:
                raise PromptTooLongError(len(tokens), self.n_ctx, len(continuation))
        return ScoreJob(tokens=tokens, options=list(options), option_tokens=option_tokens)

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        scores, _ = await self.score_options_with_usage(request, options)
        return scores
