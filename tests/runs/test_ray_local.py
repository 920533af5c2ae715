"""`--ray` with the embedded local model: each worker loads the GGUF itself (one thread per
task) and the results equal the serial run's; a rerun on Ray makes no model call."""

from __future__ import annotations

from pathlib import Path

import pytest
from ray_support import one_node
from solve_helpers import MIXED_2X2

import gtsteer
from gtsteer.llm import LLM, ResponseCache
from gtsteer.runs.units import RayOptions

pytestmark = pytest.mark.slow
#: The test domain's utility is registered by importing solve_helpers (with the fake models it
#: is imported anyway, by unpickling their backend).
ON_RAY = RayOptions("local", 2, imports=("solve_helpers",))


def test_local_model_on_ray_workers_equals_serial(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_LOCAL_THREADS", "1")  # serial: as one Ray CPU per task gets
    serial = gtsteer.solve(MIXED_2X2, llm=LLM("local", cache=ResponseCache(tmp_path / "a")),
                           games=2, iterations=200, out=tmp_path / "s", quiet=True)
    with one_node(cpus=2):
        on_ray = gtsteer.solve(MIXED_2X2, llm=LLM("local", cache=ResponseCache(tmp_path / "b")),
                               games=2, iterations=200, out=tmp_path / "r", quiet=True, ray=ON_RAY)
        again = gtsteer.solve(MIXED_2X2, llm=LLM("local", cache=ResponseCache(tmp_path / "b")),
                              games=2, iterations=200, out=tmp_path / "r2", quiet=True, ray=ON_RAY)
    assert serial.num_solved == 2 and serial.llm_calls.new_calls > 0
    assert on_ray.model_dump() == serial.model_dump()
    assert again.llm_calls.new_calls == 0 and again.metrics == serial.metrics
