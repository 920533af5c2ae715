"""How many threads llama.cpp gets: `GTSTEER_LOCAL_THREADS`, else a default that stays off the
spin-wait cliff of a busy machine (docs/LOCAL.md, "Threads")."""

from __future__ import annotations

import os

from gtsteer.llm.errors import ModelConfigError

THREADS_ENV = "GTSTEER_LOCAL_THREADS"
MAX_DEFAULT_THREADS = 8


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
