"""How a driver runs its units of work: in this process, or one Ray task per unit (`--ray`).

A driver gets one `Executor` (in its `RunContext`) and hands it every batch of units, so its body
is the same whichever executor runs them (as PSRO's `GameMap` keeps `run_psro` unaware of Ray).
`work` is called with the driver's model here, and with a worker-built client of it on a Ray
worker (`gtsteer.runs.ray_pool`); either way the units' calls land on `model`'s meter and cache
and are counted in the result (`UnitsRun.calls`). `run` calls `work(unit, model)` one unit
after another; `gather` awaits every unit's async `work(unit, model, bar)` together in one
event loop (the model sees all their requests at once, its request gate bounds them), or on
Ray one task, with its own loop, per unit. Without `--ray`, nothing of Ray is imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from gtsteer.binding import progress as shown
from gtsteer.binding.progress import GatherBar
from gtsteer.llm import LLM, UsageReport, run_sync
from gtsteer.runs.units import RayOptions, UnitsRun

T = TypeVar("T")
U = TypeVar("U")
R = TypeVar("R")

#: One unit's async work: `work(unit, model, bar)`. A module-level function (a Ray task
#: receives it by reference), whose unit is picklable and carries what rebuilds its games.
AsyncWork = Callable[[U, LLM, GatherBar], Awaitable[R]]


def run_units(
    work: Callable[[U, LLM], R],
    units: Sequence[U],
    model: LLM,
    *,
    ray: RayOptions | None = None,
    on_result: Callable[[int, R], None] | None = None,
    progress: bool = False,
    label: str = "units",
) -> UnitsRun[R]:
    """`work(unit, model)` for every unit; `on_result(i, value)` runs in this process as each
    unit finishes (drivers write their per-unit files there); `progress` counts the units
    (`label`, plural: "instances") on the open display, as they start serially and as they
    finish on Ray. An exception `work` lets out stops the run, serial or on
    Ray, so drivers catch what belongs to one unit themselves."""
    if ray is not None:
        from gtsteer.runs.ray_pool import run_on_ray  # Ray is imported only here

        return run_on_ray(work, units, model, ray, on_result=on_result, progress=progress,
                          label=label)
    before = model.usage
    values: list[R] = []
    for i, unit in enumerate(units):  # serial: the display counts the units, each its steps
        if len(units) > 1 and progress:
            shown.unit(label.removesuffix("s"), i + 1, len(units))
        value = work(unit, model)
        values.append(value)
        if on_result is not None:
            on_result(i, value)
    if len(units) > 1 and progress:
        shown.unit(None)
    return _since(values, model, before)


def _since(values: list[R], model: LLM, before: UsageReport) -> UnitsRun[R]:
    """`values` with the calls, cost and unpriced calls `model` metered since `before`."""
    after = model.usage
    return UnitsRun(values, after.since(before), model.capabilities(),
                    cost_usd=after.cost_usd - before.cost_usd,
                    unpriced_calls=after.unpriced_calls - before.unpriced_calls)


@dataclass(frozen=True)
class _InOwnLoop(Generic[U, R]):
    """Async `work` as a Ray task runs it: in the task's own event loop, without a display."""

    work: AsyncWork[U, R]

    def __call__(self, unit: U, model: LLM) -> R:
        async def one() -> R:
            return await self.work(unit, model, GatherBar(False))

        return run_sync(one())


@dataclass(frozen=True)
class Executor:
    """Serial (`ray` None) or Ray; `progress` reports to the open display as units run."""

    ray: RayOptions | None = None
    progress: bool = False

    @property
    def quiet(self) -> Executor:
        """This executor counting nothing on the display, for a driver that counts its own
        units there (its games, states or seeds)."""
        return replace(self, progress=False)

    @contextmanager
    def session(self) -> Iterator[None]:
        """One Ray session around a driver that runs units several times (a PSRO run builds a
        meta-game per iteration and oracle; steer-train plays logged then playstyle games): Ray
        starts once, not per `run_units`. Serially: nothing, and Ray is not imported."""
        if self.ray is None:
            yield
            return
        from gtsteer.runs.ray_pool import connected  # Ray is imported only here

        with connected(self.ray):
            yield

    def run(self, work: Callable[[U, LLM], R], units: Sequence[U], model: LLM, *,
            on_result: Callable[[int, R], None] | None = None,
            label: str = "units") -> UnitsRun[R]:
        """`run_units` with this executor's Ray settings and progress."""
        return run_units(work, units, model, ray=self.ray, on_result=on_result,
                         progress=self.progress, label=label)

    def gather(self, work: AsyncWork[U, R], units: Sequence[U], model: LLM, *,
               label: str = "units") -> UnitsRun[R]:
        """`work(unit, model, bar)` for every unit; the values in the units' order, the calls
        on `model`'s meter (and counted in the result), `model`'s modes as its users saw them."""
        if self.ray is not None:
            return self.run(_InOwnLoop(work), units, model, label=label)
        before = model.usage

        async def every(bar: GatherBar) -> list[R]:
            return list(await asyncio.gather(*(work(unit, model, bar) for unit in units)))

        return _since(run_sync(every(GatherBar(self.progress))), model, before)

    def gather_grouped(self, work: AsyncWork[U, list[R]], items: Sequence[T],
                       key: Callable[[T], Any], unit: Callable[[list[T]], U], model: LLM, *,
                       label: str = "units") -> list[R]:
        """`gather` over one unit per group of `items` alike in `key` (an instance: two share
        no prompt, so the units are independent); a result per item, in the items' order."""
        groups: dict[Any, list[int]] = {}
        for position, item in enumerate(items):
            groups.setdefault(key(item), []).append(position)
        run = self.gather(work, [unit([items[p] for p in mine]) for mine in groups.values()],
                          model, label=label)
        found = {p: r for mine, done in zip(groups.values(), run.values, strict=True)
                 for p, r in zip(mine, done, strict=True)}
        return [found[p] for p in range(len(items))]


#: The executor of a run without `--ray` that reports nothing to a display.
SERIAL = Executor()


class InOrder(Generic[T]):
    """`on_result` for `run_units` that hands results to `write` in the units' order (a Ray run
    finishes them in any order), so files and databases read as a serial run writes them."""

    def __init__(self, write: Callable[[int, T], None]):
        self.write = write
        self.waiting: dict[int, T] = {}
        self.next = 0

    def __call__(self, i: int, value: T) -> None:
        self.waiting[i] = value
        while self.next in self.waiting:
            self.write(self.next, self.waiting.pop(self.next))
            self.next += 1
