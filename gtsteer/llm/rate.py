"""The one request gate: at most N requests in flight and M started in any minute.

A run's `--concurrency` and `--rpm` (and `GTSTEER_RPM`) are one `RateLimit`. Every model call
takes a slot of a `RequestGate` first: serially the client's own gate and the run's
(`gtsteer.llm.session`), under Ray the same class inside one actor that every worker asks
(`gtsteer.runs.ray_pool.RateLimiter`), so the cluster keeps the limit one process would.

The gate works across threads and event loops (the sync wrappers run their own loops): counts
sit under a thread lock, and a waiter for a free slot is woken through its own loop when a
holder releases one. `rpm` spaces the starts evenly, one every 60/rpm seconds (a burst of rpm
requests at once is what providers' per-second buckets refuse); each request, once it holds a
slot, is given the next start time in turn and sleeps until then. The first request under
`rpm` goes alone and the spacing counts from its answer: its sending includes what a client
does once (a connection, an SDK's set-up), which would otherwise let the server see the second
request less than 60/rpm seconds after the first.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

#: A requests-per-minute bound for every run of this environment (unset: none); `--rpm` wins.
RPM_ENV = "GTSTEER_RPM"
WINDOW_S = 60.0


@dataclass(frozen=True)
class RateLimit:
    """At most `concurrency` requests in flight and `rpm` started in any 60 s (None: no bound)."""

    concurrency: int | None = None
    rpm: int | None = None

    def __post_init__(self) -> None:
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"--concurrency: must be >= 1, got {self.concurrency}")
        if self.rpm is not None and self.rpm < 1:
            raise ValueError(f"--rpm: must be >= 1 request per minute, got {self.rpm}")

    @property
    def bounded(self) -> bool:
        return self.concurrency is not None or self.rpm is not None

    @classmethod
    def of(cls, concurrency: int | None = None, rpm: int | None = None) -> RateLimit:
        """The limit a run asked for: `rpm` given, else `GTSTEER_RPM` from the environment."""
        return cls(concurrency, rpm if rpm is not None else env_rpm())


def env_rpm() -> int | None:
    """`GTSTEER_RPM` as a number (unset or empty: None); a ValueError naming it otherwise."""
    raw = os.environ.get(RPM_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{RPM_ENV}={raw!r}: must be a whole number of requests per minute")
    return int(raw)


class RequestGate:
    """Slots under a `RateLimit`. `lease_s` (Ray) takes back a slot whose holder died after
    that many seconds; in one process a holder always releases (`slot()`)."""

    def __init__(self, limit: RateLimit, lease_s: float | None = None):
        self.limit, self.lease_s = limit, lease_s
        self._lock = threading.Lock()
        self._held: dict[int, float] = {}  # token -> when its lease ends (inf: no lease)
        self._started: deque[float] = deque()  # start times within the last minute
        self._next_start = 0.0  # the earliest time the next request may start (rpm)
        self._first: int | None = None  # the first request under rpm, while it runs
        self._granted = False
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._tokens = itertools.count()

    def _expire(self, now: float) -> None:
        if self.lease_s is not None:
            self._held = {t: until for t, until in self._held.items() if until > now}
            if self._first is not None and self._first not in self._held:
                self._first = None  # its holder died
        while self._started and self._started[0] <= now - WINDOW_S:
            self._started.popleft()

    def _try(self, now: float) -> tuple[int, float] | None:
        """A slot's token and the seconds until its start (the rpm spacing), or None when
        every slot is held. Under the lock."""
        self._expire(now)
        if self.limit.concurrency is not None and len(self._held) >= self.limit.concurrency:
            return None
        if self._first is not None:
            return None
        start = now
        if self.limit.rpm is not None:
            start = max(now, self._next_start)
            self._next_start = start + WINDOW_S / self.limit.rpm
        self._started.append(start)
        token = next(self._tokens)
        if self.limit.rpm is not None and not self._granted:
            self._first = token
        self._granted = True
        lease_end = start + self.lease_s if self.lease_s is not None else float("inf")
        self._held[token] = lease_end
        return token, start - now

    async def acquire(self) -> tuple[int, float]:
        """A slot's token and the seconds spent waiting for its turn under `rpm`."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                taken = self._try(time.monotonic())
                future: asyncio.Future[None] | None = None
                if taken is None:
                    future = loop.create_future()
                    self._waiters.append((loop, future))
            if taken is not None:
                token, delay = taken
                if delay > 0:
                    try:
                        await asyncio.sleep(delay)
                    except asyncio.CancelledError:
                        self.release(token)
                        raise
                return token, delay
            assert future is not None
            try:
                # A lease may run out with nobody releasing: look again now and then.
                await asyncio.wait_for(asyncio.shield(future),
                                       None if self.lease_s is None else 1.0)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                self._forget(loop, future, woken_unused=True)
                raise
            self._forget(loop, future)

    def _forget(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None], *,
                woken_unused: bool = False) -> None:
        """Drop a waiter that stopped waiting; one that was woken but gives up (cancelled)
        passes its wake-up to the next waiter."""
        with self._lock:
            try:
                self._waiters.remove((loop, future))
            except ValueError:  # already woken
                if woken_unused:
                    self._wake_one()

    def release(self, token: int) -> None:
        with self._lock:
            self._held.pop(token, None)
            if token == self._first and self.limit.rpm is not None:
                self._first = None
                self._next_start = time.monotonic() + WINDOW_S / self.limit.rpm
                for _ in range(len(self._waiters)):  # all were held back by the first one
                    self._wake_one()
            self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            loop, future = self._waiters.popleft()
            if loop.is_closed():
                continue
            loop.call_soon_threadsafe(_set, future)
            return

    def counts(self) -> tuple[int, int]:
        """(slots held now, requests started in the last minute)."""
        with self._lock:
            now = time.monotonic()
            self._expire(now)
            return len(self._held), sum(s <= now for s in self._started)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[float]:
        """Hold a slot for one request; yields the seconds waited for its turn under `rpm`."""
        token, waited = await self.acquire()
        try:
            yield waited
        finally:
            self.release(token)


def _set(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
