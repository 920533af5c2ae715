"""Serve queued requests on one llama.cpp context so that those sharing a prefix run together.

A tree level or a batch of Werewolf calls arrives as many concurrent requests. One worker thread
serves them one at a time, each time picking the queued request whose prompt shares the longest
prefix with the one just served (ties: first come, first served), so the prefix cache finds the
shared blocks still in memory. Outputs never depend on this order: the prefix cache is exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix, by binary search over C-speed slice comparisons."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def pop_longest_shared(pending: list[Any], last_key: str) -> Any:
    """Remove and return the item (with `.key`, `.order`) whose key shares the longest prefix
    with `last_key`; ties: the oldest (lowest order)."""
    best = max(pending, key=lambda j: (common_prefix_len(j.key, last_key), -j.order))
    pending.remove(best)
    return best


@dataclass(order=True)
class _Job:
    order: int
    key: str = field(compare=False)
    fn: Callable[[], Any] = field(compare=False)
    loop: asyncio.AbstractEventLoop = field(compare=False)
    future: asyncio.Future = field(compare=False)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting task was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class PrefixOrderedQueue:
    """One worker thread; `await queue.run(key, fn)` runs `fn()` there, prefix-ordered by `key`."""

    def __init__(self, name: str = "gtsteer-llama"):
        self.name = name
        self._cond = threading.Condition()
        self._pending: list[_Job] = []
        self._counter = itertools.count()
        self._last_key = ""
        self._thread: threading.Thread | None = None
        self.running = threading.Lock()  # held while a job runs (closing waits for it)
        self.served: deque[str] = deque(maxlen=1024)  # recent keys in serving order (tests)

    async def run(self, key: str, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        job = _Job(next(self._counter), key, fn, loop, loop.create_future())
        with self._cond:
            self._pending.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()
        return await job.future

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                job = pop_longest_shared(self._pending, self._last_key)
            if job.future.cancelled():
                continue
            self._last_key = job.key
            self.served.append(job.key)
            result, error = None, None
            with self.running:
                try:
                    result = job.fn()
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                    error = exc
            with contextlib.suppress(RuntimeError):  # that event loop has closed
                job.loop.call_soon_threadsafe(_settle, job.future, result, error)
