"""One rich progress display for concurrent LLM work: a bar per `gather`, or nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Literal, Self, TypeVar, overload

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from gtsteer.llm import waits

T = TypeVar("T")
CHUNK = 1024  # coroutines alive at once; the LLM layer bounds real concurrency itself


class WaitColumn(ProgressColumn):
    """The longest running wait between two tries of a model call ("openai/x: rate limited
    (status 429); try 2 of 5 in 41 s"), read at every refresh; empty when nothing waits."""

    def render(self, task: Task) -> Text:
        wait = waits.longest()
        return Text("" if wait is None else wait.describe(), style="yellow")


class GatherBar:
    """`with GatherBar(enabled) as bar: await bar.gather(label, jobs)`: one bar per phase.

    Gathers under a label that already has a bar add to it, so units of work gathered
    together (`gtsteer.runs.executor`), each with its own `gather("messages", ...)`, show one
    bar of every unit's messages."""

    def __init__(self, enabled: bool = True):
        columns = (
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), WaitColumn(),
        )
        self.progress = Progress(*columns) if enabled else None
        self.tasks: dict[str, tuple[TaskID, int]] = {}  # label -> (its bar, jobs so far)

    def __enter__(self) -> Self:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _task(self, progress: Progress, label: str, jobs: int) -> TaskID:
        if label in self.tasks:
            task, before = self.tasks[label]
            progress.update(task, total=before + jobs)
        else:
            task, before = progress.add_task(label, total=jobs), 0
        self.tasks[label] = (task, before + jobs)
        return task

    @overload
    async def gather(self, label: str, jobs: Sequence[Awaitable[T]], *,
                     return_exceptions: Literal[False] = False) -> list[T]: ...

    @overload
    async def gather(self, label: str, jobs: Sequence[Awaitable[T]], *,
                     return_exceptions: Literal[True]) -> list[T | BaseException]: ...

    async def gather(self, label: str, jobs: Sequence[Awaitable[T]], *,
                     return_exceptions: bool = False) -> list:
        """Await `jobs` (CHUNK at a time) and return their results in order, as asyncio.gather
        does; the bar `label` advances as each finishes."""
        if not jobs:
            return []
        progress = self.progress
        task = None if progress is None else self._task(progress, label, len(jobs))

        async def tracked(job: Awaitable[T]) -> T:
            try:
                return await job
            finally:
                if progress is not None and task is not None:
                    progress.advance(task)

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
