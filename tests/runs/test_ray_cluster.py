"""A two-node Ray cluster on this machine: answers travel without a shared disk, and a worker
killed mid-task is retried with nothing lost, nothing counted twice, no partial cache entry."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_support import ROOT, two_nodes

import gtsteer
from gtsteer.llm import LLM, ResponseCache
from gtsteer.runs.executor import run_units
from gtsteer.runs.units import RayOptions

FRUIT = str(Path(ROOT) / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
CLUSTER = RayOptions("auto")  # already joined by the fixture: reused, not started


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, str]]:
    with two_nodes(worker_cpus=2) as nodes:
        yield nodes


def test_answers_travel_from_the_other_node_to_the_drivers_cache(
    cluster: tuple[str, str], tmp_path: Path
) -> None:
    serial = gtsteer.solve(FRUIT, llm=LLM("fake", cache=ResponseCache(tmp_path / "serial")),
                           games=2, iterations=50, out=tmp_path / "s", quiet=True)
    cache = ResponseCache(tmp_path / "ray")
    on_ray = gtsteer.solve(FRUIT, llm=LLM("fake", cache=cache), games=2, iterations=50,
                           out=tmp_path / "r", quiet=True, ray=CLUSTER)
    assert on_ray.model_dump() == serial.model_dump()
    assert set(cache._cache) == set(ResponseCache(tmp_path / "serial")._cache)
    again = gtsteer.solve(FRUIT, llm=LLM("fake", cache=ResponseCache(tmp_path / "ray")), games=2,
                          iterations=50, out=tmp_path / "r2", quiet=True, ray=CLUSTER)
    assert again.llm_calls.new_calls == 0 and again.metrics == serial.metrics


def test_units_run_on_the_worker_node(cluster: tuple[str, str]) -> None:
    head, worker = cluster
    run = run_units(_echo, [1, 2, 3], LLM("fake", use_cache=False), ray=CLUSTER)
    assert run.values == [1, 2, 3] and run.nodes == [worker] * 3 and worker != head


def _echo(unit: int, model: LLM) -> int:
    return unit


def _die_once(unit: tuple[int, str], model: LLM) -> int:
    """Unit 1's first try asks the model, then its worker process dies mid-task."""
    index, marks = unit
    mark = Path(marks) / f"{index}.tried"
    if index == 1 and not mark.exists():
        mark.write_text(str(os.getpid()))
        model.generate_sync(f"doomed {index}", seed=index)
        os._exit(1)
    return len(model.generate_sync(f"kept {index}", seed=index).text)


def test_a_worker_killed_mid_task_is_retried_and_leaves_no_partial_entry(
    cluster: tuple[str, str], tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "cache")
    units = [(i, str(tmp_path)) for i in range(4)]
    run = run_units(_die_once, units, LLM("fake", cache=cache), ray=CLUSTER)
    assert (tmp_path / "1.tried").exists()  # it did die once
    expected = [len(LLM("fake", use_cache=False).generate_sync(f"kept {i}", seed=i).text)
                for i in range(4)]
    assert run.values == expected  # every unit once, in order
    assert (run.calls.requests, run.calls.new_calls) == (4, 4)  # the dead try is not counted
    assert len(cache) == 4
    check = LLM("fake", cache=ResponseCache(tmp_path / "cache"))
    check.generate_sync("kept 1", seed=1)
    check.generate_sync("doomed 1", seed=1)
    assert (check.usage.cache_hits, check.usage.new_calls) == (1, 1)  # no entry of the dead try


def test_a_summary_on_the_cluster_is_written_once_per_instance(
    cluster: tuple[str, str], tmp_path: Path
) -> None:
    gtsteer.solve(FRUIT, llm=LLM("fake"), games=3, iterations=10, out=tmp_path / "o", quiet=True,
                  ray=CLUSTER)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["instances"] == [0, 1, 2]
    assert sorted(p.name for p in (tmp_path / "o" / "games").glob("*.json")) == [
        "0.json", "1.json", "2.json"]
