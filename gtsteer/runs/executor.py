"""How a driver runs its units of work: in this process, or one Ray task per unit (`--ray`).

A driver builds one `Executor` from its `--ray` option and hands it every batch of units; its
body is the same whichever executor runs them, as PSRO's `GameMap` keeps `run_psro` unaware
of Ray. `gather` takes async per-unit work, `work(unit, model, bar)`:

- serially, every unit's coroutine is awaited together in one event loop, so the model sees
  all their requests at once (its own semaphore bounds them) and `bar` is one progress display
  whose same-named phases add up across units;
- on Ray, each unit is one task that runs `work` with a worker-built client of `model` and no
  display; the tasks' usage lands in `model`'s meter and their new answers in its cache
  (`gtsteer.runs.ray_map`), so every count downstream reads as in the serial run.

Without `--ray` nothing of Ray is imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from gtsteer.binding.progress import GatherBar
from gtsteer.llm import LLM, run_sync
from gtsteer.runs.units import RayOptions, UnitsRun, ray_session

U = TypeVar("U")
R = TypeVar("R")

#: One unit's async work: `work(unit, model, bar)`. A module-level function (a Ray task
#: receives it by reference), whose unit is picklable and carries what rebuilds its games.
AsyncWork = Callable[[U, LLM, GatherBar], Awaitable[R]]


@dataclass(frozen=True)
class _InOwnLoop(Generic[U, R]):
    """`work` as a Ray task runs it: in the task's own event loop, without a display."""

    work: AsyncWork[U, R]

    def __call__(self, unit: U, model: LLM) -> R:
        async def one() -> R:
            return await self.work(unit, model, GatherBar(False))

        return run_sync(one())


@dataclass(frozen=True)
class Executor:
    """Serial (`ray` None) or Ray; `progress` shows a bar while units run."""

    ray: RayOptions | None = None
    progress: bool = False

    @contextmanager
    def session(self) -> Iterator[None]:
        """One Ray session around several `gather`s (Ray starts once); serially, nothing."""
        with ray_session(self.ray):
            yield

    def gather(self, work: AsyncWork[U, R], units: Sequence[U], model: LLM, *,
               label: str = "units") -> UnitsRun[R]:
        """`work(unit, model, bar)` for every unit; the values in the units' order, the calls
        on `model`'s meter (and counted in the result), `model`'s modes as its users saw them."""
        if self.ray is not None:
            from gtsteer.runs.ray_map import map_on_ray

            return map_on_ray(_InOwnLoop(work), units, model, self.ray,
                              progress=self.progress, label=label)
        before = model.usage

        async def every(bar: GatherBar) -> list[R]:
            return list(await asyncio.gather(*(work(unit, model, bar) for unit in units)))

        with GatherBar(self.progress) as bar:
            values = run_sync(every(bar))
        after = model.usage
        return UnitsRun(values, after.since(before), model.capabilities(),
                        cost_usd=after.cost_usd - before.cost_usd)


#: The executor of a run without `--ray`.
SERIAL = Executor()
