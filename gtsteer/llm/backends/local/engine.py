"""One loaded GGUF (`LlamaEngine`) and the process-wide registry of them.

An engine owns the llama.cpp context, how its model is prompted (a chat template or plain
completion), its block prefix cache and the prefix-ordered worker that serves its requests one
at a time. Engines are shared per (file, context size, threads, cache bound, prompting) and
freed at exit while the interpreter is intact.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gtsteer.llm.backends.local.chat import ChatTemplate, has_chat_template
from gtsteer.llm.backends.local.prefix_cache import BlockPrefixCache, NovelTokens
from gtsteer.llm.backends.local.worker import PrefixOrderedQueue
from gtsteer.llm.errors import ModelConfigError
from gtsteer.llm.types import GenerationRequest

_engines: dict[tuple, LlamaEngine] = {}
_engines_lock = threading.Lock()
_counting = False  # whether engines count tokens (`counting_tokens`)


class LlamaEngine:
    """One loaded GGUF: the llama.cpp context, how it is prompted, its prefix cache and queue."""

    def __init__(self, path: Path, n_ctx: int, threads: int, cache_bytes: int, chat: bool | None):
        try:
            # `Llama` with llama.cpp's grammar-check-the-sampled-token-first sampling.
            from gtsteer.llm.backends.local.sampling import FastGrammarLlama
        except ImportError as exc:
            raise ModelConfigError(
                "llama-cpp-python is not installed: pip install 'gtsteer[local]' (it builds"
                ' llama.cpp; `make setup` in a clone passes CMAKE_ARGS="-DGGML_NATIVE=OFF").'
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
        self.novel: NovelTokens | None = None
        self.count_tokens(_counting)
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

    def count_tokens(self, on: bool) -> None:
        """Start counting novel tokens and the block floor afresh, or stop. Starting empties
        the prefix cache, so what the engine evaluates and its floor start from the same
        nothing (outputs are the same bytes with or without it)."""
        if on:
            self.prefix.clear()
        self.novel = NovelTokens() if on else None
        self.prefix.count_floor(on)

    def count_novel(self, tokens: Any) -> int | None:
        """Of `tokens` (a sequence this engine just held in its KV cache), those no earlier
        sequence had as a prefix; None unless counting is on."""
        if self.novel is None:
            return None
        return self.novel.add(tokens)

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


@contextlib.contextmanager
def counting_tokens() -> Iterator[None]:
    """Every engine, loaded now or within this block, counts each call's novel tokens and
    block floor from the block's start (`Usage.tokens_novel`, `prompt_tokens_block_floor`),
    and stops at its end. One counted stretch at a time per process: engines are shared."""
    _switch_counting(True)
    try:
        yield
    finally:
        _switch_counting(False)


def _switch_counting(on: bool) -> None:
    """Set the switch engines read as they load, and switch every loaded one, each between
    requests."""
    global _counting
    with _engines_lock:
        if on and _counting:
            raise RuntimeError("local models are already counting tokens (one profiled run at a"
                               " time per process)")
        _counting = on
        engines = list(_engines.values())
    for engine in engines:
        with engine.queue.running:  # not under a request
            engine.count_tokens(on)


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
