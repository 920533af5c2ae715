"""Ray for drivers that meter their own models (`psro`, and `eval steering|reward|verdict`
through `gtsteer.runs.executor`).

`run_units` returns the tasks' call counts beside the values; these drivers instead snapshot
their models' meters before and after the work (per PSRO iteration, per report), so here each
task also returns its worker-built model's usage and the driver folds it into its own model's
meter (`UsageMeter.absorb`): every count downstream reads as in the serial run.

Without `--ray` none of this runs (the executor gathers the same units in this process), and
nothing here imports Ray (`gtsteer.runs.ray_pool` is loaded only inside a Ray session).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from gtsteer.llm import LLM
from gtsteer.llm.usage import UsageReport
from gtsteer.runs.units import RayOptions, UnitsRun, run_units

U = TypeVar("U")
R = TypeVar("R")


@dataclass(frozen=True)
class _Metered(Generic[U, R]):
    """`work` plus the usage of the model it ran with (picklable: `work` travels by name)."""

    work: Callable[[U, LLM], R]

    def __call__(self, unit: U, model: LLM) -> tuple[R, UsageReport]:
        before = model.usage
        value = self.work(unit, model)
        return value, model.usage.minus(before)


def map_on_ray(
    work: Callable[[U, LLM], R],
    units: Sequence[U],
    model: LLM,
    ray: RayOptions,
    *,
    progress: bool = False,
    label: str = "units",
) -> UnitsRun[R]:
    """`work(unit, model)` for every unit as Ray tasks; the tasks' usage lands in `model`'s
    meter, their new answers in its cache (the driver stays the cache's only writer)."""
    run = run_units(_Metered(work), units, model, ray=ray, progress=progress, label=label)
    for _, usage in run.values:
        model.meter.absorb(usage)
    return UnitsRun([value for value, _ in run.values], run.calls, run.capabilities,
                    cost_usd=run.cost_usd, nodes=run.nodes)

