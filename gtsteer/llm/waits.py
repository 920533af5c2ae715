"""The waits between tries that are running now, for progress displays.

A rate-limited or failing server makes the client sleep between tries (up to `--max-wait`
seconds each); without a word on screen a run then looks hung. The client records each wait
here; the progress display (`gtsteer.binding.progress`) shows the longest one still running.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Wait:
    model: str
    reason: str  # what the last try met, e.g. "rate limited (status 429)"
    until: float  # time.monotonic() when the next try starts
    next_try: int
    tries: int

    def describe(self, now: float | None = None) -> str:
        left = max(0.0, self.until - (time.monotonic() if now is None else now))
        return (f"{self.model}: {self.reason}; try {self.next_try} of {self.tries} in"
                f" {left:.0f} s")


_waits: dict[int, Wait] = {}
_ids = itertools.count()
_lock = threading.Lock()


def begin(wait: Wait) -> int:
    with _lock:
        token = next(_ids)
        _waits[token] = wait
        return token


def end(token: int) -> None:
    with _lock:
        _waits.pop(token, None)


def longest() -> Wait | None:
    """The running wait that ends last, if any."""
    now = time.monotonic()
    with _lock:
        running = [w for w in _waits.values() if w.until > now]
    return max(running, key=lambda w: w.until, default=None)
