"""`--ray` on `gtsteer psro` and `gtsteer eval steering|reward|verdict`: the same files as the
serial run, the model calls counted as serially, and a rerun on Ray that makes no call.

Each command is run three ways with the `fake` model and a fresh cache per run: serially, with
its units shipped the way Ray ships them but in this process (pickled, run with a fresh
client of the model; no Ray needed), and on a real Ray node (2 CPUs, loopback).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ray_support import ROOT, one_node
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM, LLMCalls
from gtsteer.runs.units import UnitsRun

CONFIGS = Path(ROOT) / "gtsteer" / "configs"
FRUIT = str(CONFIGS / "trade_fruit_tone.yaml")
COURT = str(CONFIGS / "court.yaml")


def _without_wall_time(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_wall_time(v) for k, v in data.items() if k != "wall_s"}
    if isinstance(data, list):
        return [_without_wall_time(v) for v in data]
    return data


def _json(out: Path, *names: str) -> dict[str, Any]:
    return {name: _without_wall_time(json.loads((out / name).read_text())) for name in names}


def psro_files(out: Path) -> dict[str, Any]:
    """summary.json and every iteration's file, minus timings."""
    iterations = sorted(p.relative_to(out).as_posix() for p in (out / "iterations").iterdir())
    return _json(out, "summary.json", *iterations)


@dataclass(frozen=True)
class Command:
    args: Callable[[Path], list[str]]
    files: Callable[[Path], dict[str, Any]]
    new_calls: Callable[[dict[str, Any]], int]
    #: More options for the Ray-free run only (cheap there, slow on a Ray node).
    shipped_extra: tuple[str, ...] = ()


COMMANDS = {
    # the trajectory oracle reads the filled tree in the driver: a game whose worker-filled
    # entries did not come back would ask the model again there and count other requests;
    # --heldout also ships the fresh-sample games (other sample offsets)
    "psro": Command(
        lambda out: ["psro", FRUIT, "--llm", "fake", "--games", "2", "--iterations", "1",
                     "--candidates", "2", "--operator", "trajectory", "-q", "-o", str(out)],
        psro_files,
        lambda files: files["summary.json"]["llm_calls"]["new_calls"],
        shipped_extra=("--heldout",),
    ),
    "steering": Command(
        lambda out: ["eval", "steering", FRUIT, "--llm", "fake", "--samples", "3", "-q",
                     "-o", str(out)],
        lambda out: _json(out, "steering.json"),
        lambda files: files["steering.json"]["llm_calls"]["new_calls"],
    ),
    "reward": Command(
        lambda out: ["eval", "reward", FRUIT, "--llm", "fake", "--cases", "2", "-q",
                     "-o", str(out)],
        lambda out: _json(out, "reward.json"),
        lambda files: files["reward.json"]["llm_calls"]["new_calls"],
    ),
    "verdict": Command(
        lambda out: ["eval", "verdict", COURT, "--llm", "fake", "--games", "2", "--breadth",
                     "2", "-q", "-o", str(out)],
        lambda out: {**_json(out, "report.json"),
                     "games.jsonl": (out / "games.jsonl").read_text()},
        lambda files: files["report.json"]["new_llm_calls"],
    ),
}


def run_cli(name: str, out: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
            *extra: str) -> dict[str, Any]:
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(cache))
    result = CliRunner().invoke(app, [*COMMANDS[name].args(out), *extra])
    assert result.exit_code == 0, result.output
    return COMMANDS[name].files(out)


def shipped_run_units(work: Callable[[Any, LLM], Any], units: Sequence[Any], model: LLM, *,
                      ray: Any = None, progress: bool = False, label: str = "units",
                      on_result: Any = None) -> UnitsRun[Any]:
    """`run_units` as a Ray run does it, in this process: the function and each unit travel
    pickled and run with a fresh client of the driver's model (its own meter, no game or
    answer in memory), as a worker builds it; its usage comes home as a task's does."""
    assert ray is not None and on_result is None
    values, modes = [], {}
    for unit in units:
        task, shipped = pickle.loads(pickle.dumps((work, unit)))
        worker = LLM(model.model, cache=model.cache)
        values.append(task(shipped, worker))
        model.meter.absorb(worker.usage)  # as run_on_ray: the run's bill counts the task's calls
        modes = worker.capabilities()
    return UnitsRun(values, LLMCalls(), modes)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_units_shipped_like_ray_tasks_give_the_serial_files(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Ray: the drivers' units, their pickling and the merge of their results."""
    import gtsteer.runs.executor

    extra = COMMANDS[name].shipped_extra
    serial = run_cli(name, tmp_path / "serial", tmp_path / "serial-cache", monkeypatch, *extra)
    monkeypatch.setattr(gtsteer.runs.executor, "run_units", shipped_run_units)
    monkeypatch.setattr(gtsteer.runs.executor.Executor, "session", lambda _: nullcontext())
    shipped = run_cli(name, tmp_path / "shipped", tmp_path / "shipped-cache", monkeypatch,
                      *extra, "--ray", "local")
    assert COMMANDS[name].new_calls(serial) > 0
    assert shipped == serial
    again = run_cli(name, tmp_path / "again", tmp_path / "shipped-cache", monkeypatch,
                    *extra, "--ray", "local")
    assert COMMANDS[name].new_calls(again) == 0


@pytest.fixture(scope="module")
def ray_node() -> Iterator[None]:
    with one_node(cpus=2):
        yield


@pytest.mark.parametrize("name", list(COMMANDS))
def test_on_ray_equals_serial_and_a_rerun_makes_no_call(
    name: str, ray_node: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = run_cli(name, tmp_path / "serial", tmp_path / "serial-cache", monkeypatch)
    on_ray = run_cli(name, tmp_path / "ray", tmp_path / "ray-cache", monkeypatch,
                     "--ray", "local", "--workers", "2")
    assert COMMANDS[name].new_calls(serial) > 0
    assert on_ray == serial  # every file, the model calls included (a fresh cache each)
    again = run_cli(name, tmp_path / "again", tmp_path / "ray-cache", monkeypatch,
                    "--ray", "local", "--workers", "2")
    assert COMMANDS[name].new_calls(again) == 0
