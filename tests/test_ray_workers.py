"""`--workers N` means N units at once: a task blocked on a cache lookup (a `ray.get` on the
driver's cache actor) lends its CPU to Ray, which would otherwise start more tasks than the
run was given CPUs, each with its own model (seen with the local model: four llama.cpp tasks
on `--workers 2`)."""

from __future__ import annotations

from pathlib import Path

from ray_support import most_at_once, one_node, timed_unit

from gtsteer.llm import LLM
from gtsteer.runs.units import RayOptions, run_units


def test_a_ray_run_keeps_as_many_units_running_as_it_has_cpus(tmp_path: Path) -> None:
    folder = tmp_path / "intervals"
    folder.mkdir()
    units = [(str(folder), i) for i in range(6)]
    with one_node(cpus=2):
        run = run_units(timed_unit, units, LLM("fake"), ray=RayOptions("local", 2))
    assert run.values == list(range(6))
    assert run.calls.new_calls == 12
    assert most_at_once(folder) == 2
