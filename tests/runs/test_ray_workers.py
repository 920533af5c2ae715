"""`--workers N` means N units at once: a task blocked on a cache lookup (a `ray.get` on the
driver's cache actor) lends its CPU to Ray, which would otherwise start more tasks than the
run was given CPUs, each with its own model (seen with the local model: four llama.cpp tasks
on `--workers 2`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ray_support import most_at_once, one_node, timed_unit
from solve_helpers import MIXED_2X2, PricedBackend

import gtsteer
from gtsteer.llm import LLM, ResponseCache
from gtsteer.runs.executor import run_units
from gtsteer.runs.solve_schema import SolveSummary
from gtsteer.runs.units import RayOptions


def test_a_ray_run_keeps_as_many_units_running_as_it_has_cpus(tmp_path: Path) -> None:
    folder = tmp_path / "intervals"
    folder.mkdir()
    units = [(str(folder), i) for i in range(6)]
    with one_node(cpus=2):
        run = run_units(timed_unit, units, LLM("fake"), ray=RayOptions("local", 2))
    assert run.values == list(range(6))
    assert run.calls.new_calls == 12
    assert most_at_once(folder) == 2


def test_a_ray_runs_summary_sums_the_workers_cost_as_the_serial_run_does(tmp_path: Path) -> None:
    def solve(name: str, ray: RayOptions | None) -> SolveSummary:
        model = LLM(backend=PricedBackend(), cache=ResponseCache(tmp_path / f"{name}-cache"))
        return gtsteer.solve(MIXED_2X2, llm=model, games=3, iterations=10, out=tmp_path / name,
                             quiet=True, ray=ray)

    serial = solve("serial", None)
    assert serial.llm_calls.new_calls > 0
    assert serial.llm_cost_usd == pytest.approx(serial.llm_calls.new_calls * PricedBackend.PRICE)
    with one_node(cpus=2):
        on_ray = solve("ray", RayOptions("local", 2))
    assert on_ray.llm_calls == serial.llm_calls
    assert on_ray.llm_cost_usd == pytest.approx(serial.llm_cost_usd)
    rerun = solve("serial", None)  # every answer from the cache: nothing paid
    assert (rerun.llm_calls.new_calls, rerun.llm_cost_usd) == (0, 0.0)
