"""The one live progress display of a command, and `GatherBar`, which reports concurrent LLM
work into it.

A command opens one display around its run (`with shown("solve"):`, the CLI's `@spending`
and the Python API do); everything below tells it where the run is through this module's
functions, which do nothing while no display is open (`-q`, `quiet=True`, a Ray worker):
`expect` (the requests the tree estimate says the run sends), `unit` ("instance 3/20", the
executor), `phase` ("expand", "solve", "held-out", "train": the drivers), `step` ("depth 3:
messages 120/256": `GatherBar` and counted loops). One line shows them with the requests
answered so far, an ETA from those requests against the estimate (else from the units done),
the time elapsed and the longest wait between two tries of a model call. It is transient and
draws only on a terminal: a pipe, a log or a test's captured output gets nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Literal, Self, TypeVar, overload

from rich import get_console
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task
from rich.text import Text

from gtsteer.llm import session, waits

T = TypeVar("T")
CHUNK = 1024  # coroutines alive at once; the LLM layer bounds real concurrency itself


class Display:
    """What the open display shows (see the module docstring); rendered by `_Line`."""

    def __init__(self, name: str, console: Console | None):
        self.name, self.unit, self.phase, self.step = name, "", "", ""
        self.expected: int | None = None
        self.units_done = self.units_total = 0
        run = session.current()  # read here: the display renders on its own thread
        self.meter = None if run is None else run.meter
        self.start = time.monotonic()
        self.progress = Progress(_Line(self, left=True), BarColumn(bar_width=20),
                                 _Line(self, left=False), console=console, transient=True)
        self.task = self.progress.add_task(name, total=None)

    def requests(self) -> int:
        return 0 if self.meter is None else self.meter.snapshot().requests

    def done(self) -> float | None:
        """The share of the run done: requests against the estimate (a worst case: trees
        that end early send fewer) or units done, whichever says more; None: unknown."""
        shares = [min(1.0, self.requests() / self.expected)] if self.expected else []
        shares += [self.units_done / self.units_total] if self.units_total else []
        return max(shares, default=None)

    def eta(self) -> str:
        share, elapsed = self.done(), time.monotonic() - self.start
        if not share:
            return "ETA --:--"
        return f"ETA {timedelta(seconds=round(elapsed * (1 - share) / share))}"

    def left_text(self) -> str:
        return " · ".join(p for p in (self.name, self.unit, self.phase, self.step) if p)

    def right_text(self) -> str:
        requests = f"{self.requests():,}" + (f"/≤{self.expected:,}" if self.expected else "")
        elapsed = timedelta(seconds=round(time.monotonic() - self.start))
        wait = waits.longest()
        return " · ".join([f"{requests} requests", self.eta(), str(elapsed),
                           *([wait.describe()] if wait is not None else [])])

    def changed(self, redraw: bool = True) -> None:
        """Move the bar; `redraw` at once where the line says something new (a unit, a phase)."""
        share = self.done()
        self.progress.update(self.task, total=None if share is None else 1.0,
                             completed=share or 0.0, refresh=redraw)


class _Line(ProgressColumn):
    """The display's text left or right of its bar, read at every refresh."""

    def __init__(self, display: Display, left: bool):
        super().__init__()
        self.display, self.left = display, left

    def render(self, task: Task) -> Text:
        if self.left:
            return Text(self.display.left_text())
        wait = waits.longest()
        return Text(self.display.right_text(), style="yellow" if wait is not None else "")


_open: Display | None = None


@contextmanager
def shown(name: str, *, enabled: bool = True, console: Console | None = None
          ) -> Iterator[Display | None]:
    """The command's one display for this block (nothing when not `enabled`, off a terminal,
    or when one is open already: a run inside a run, as `imitate`'s solve, reports into the
    outer one)."""
    global _open
    if not enabled or _open is not None or not (console or get_console()).is_terminal:
        yield _open
        return
    _open = Display(name, console)
    try:
        with _open.progress:
            yield _open
    finally:
        _open = None


def expect(requests: int) -> None:
    """The requests the run will send at most (its tree estimate): the ETA's measure."""
    if _open is not None:
        _open.expected = requests
        _open.changed()


def unit(label: str | None, i: int = 0, n: int = 0, *, started: bool = True) -> None:
    """The unit of work now running ("instance", 3, 20), or with `started` False the units
    finished (on Ray): its counter on the line; None: the batch of units is over."""
    if _open is not None:
        _open.unit = "" if label is None else f"{label} {i}/{n}"
        _open.phase, _open.step = "", ""
        _open.units_done, _open.units_total = i - 1 if started else i, n
        _open.changed()


def phase(name: str) -> None:
    """What the current unit does now ("expand", "solve", "held-out", "train")."""
    if _open is not None:
        _open.phase, _open.step = name, ""
        _open.changed()


def step(label: str, done: int, total: int) -> None:
    """Progress inside the phase ("depth 3: messages", 120, 256); a ProgressFn's shape."""
    if _open is not None:
        _open.step = f"{label} {done:,}/{total:,}"
        _open.changed(redraw=False)


def counter(label: str, total: int, done: int = 0) -> Callable[..., None]:
    """`step` for a loop that counts as it goes: returns `advance(n)`."""
    count = [done]
    step(label, done, total)

    def advance(n: int = 1) -> None:
        count[0] += n
        step(label, count[0], total)

    return advance


class GatherBar:
    """`with GatherBar(enabled) as bar: await bar.gather(label, jobs)`: each gather is a step
    of the open display (`enabled` False: reports nothing).

    Gathers under a label seen before add to its count, so units of work gathered together
    (`gtsteer.runs.executor`), each with its own `gather("messages", ...)`, count as one."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.counts: dict[str, list[int]] = {}  # label -> [done, total]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    @overload
    async def gather(self, label: str, jobs: Sequence[Awaitable[T]], *,
                     return_exceptions: Literal[False] = False) -> list[T]: ...

    @overload
    async def gather(self, label: str, jobs: Sequence[Awaitable[T]], *,
                     return_exceptions: Literal[True]) -> list[T | BaseException]: ...

    async def gather(self, label: str, jobs: Sequence[Awaitable[T]], *,
                     return_exceptions: bool = False) -> list:
        """Await `jobs` (CHUNK at a time) and return their results in order, as asyncio.gather
        does; the display's step `label` counts them as each finishes."""
        if not jobs:
            return []
        count = self.counts.setdefault(label, [0, 0])
        count[1] += len(jobs)
        shown = self.enabled

        async def tracked(job: Awaitable[T]) -> T:
            try:
                return await job
            finally:
                count[0] += 1
                if shown:
                    step(label, *count)

        results: list = []
        for start in range(0, len(jobs), CHUNK):
            chunk = jobs[start : start + CHUNK]
            try:
                results += await asyncio.gather(*(tracked(j) for j in chunk),
                                                return_exceptions=return_exceptions)
            except BaseException:
                for job in jobs[start + CHUNK :]:  # never started: close, no "never awaited"
                    if asyncio.iscoroutine(job):
                        job.close()
                raise
        return results
