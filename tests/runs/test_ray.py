"""`--ray` on one real Ray node (2 CPUs, loopback): same results as serial, the cache as the
single source of truth, failures confined to their instance, and no Ray without `--ray`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ray_support import ROOT, one_node
from solve_helpers import MIXED_2X2, ConstantBackend
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.llm import LLM, ResponseCache
from gtsteer.runs.units import RayOptions

FRUIT = str(Path(ROOT) / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
ON_RAY = RayOptions("local", 2)


@pytest.fixture(scope="module")
def ray_node() -> Iterator[None]:
    with one_node(cpus=2):
        yield


def games_of(out: Path) -> dict[str, object]:
    """Every per-game file, minus the expansion's wall time (the one field timing fills)."""
    files = {}
    for path in sorted((out / "games").iterdir()):
        if path.suffix == ".json":
            record = json.loads(path.read_text())
            record["expansion"].pop("wall_s")
            files[path.name] = record
        else:
            files[path.name] = path.read_text()
    return files


def solve_cli(out: Path, *extra: str) -> dict:
    result = CliRunner().invoke(app, ["solve", FRUIT, "--llm", "fake", "--games", "6", "-q",
                                      "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text())


COURT = str(Path(ROOT) / "gtsteer" / "configs" / "court.yaml")
WEREWOLF_SMALL = ["--llm", "fake", "--max-days", "1", "--players", "5", "--max-messages", "2"]
#: One small run of every command that takes --ray, without it.
SERIAL_RUNS = {
    "solve": ["solve", FRUIT, "--llm", "fake", "-q", "-k", "10"],
    "psro": ["psro", FRUIT, "--llm", "fake", "-q", "--iterations", "1", "--candidates", "2"],
    "steering": ["eval", "steering", FRUIT, "--llm", "fake", "-q", "--samples", "2"],
    "reward": ["eval", "reward", FRUIT, "--llm", "fake", "-q", "--cases", "1"],
    "verdict": ["eval", "verdict", COURT, "--llm", "fake", "-q", "--games", "1",
                "--breadth", "2"],
    # steer-train writes the policy evaluate then steers with (runs in this order)
    "steer-train": ["werewolf", "steer-train", *WEREWOLF_SMALL, "--games", "1", "--states", "2",
                    "--iterations", "10", "--train-steps", "5", "--embedder", "test-hash"],
    "evaluate": ["werewolf", "evaluate", *WEREWOLF_SMALL, "--games", "1", "--steer", "STEER"],
}


def test_without_ray_flag_ray_is_never_imported(tmp_path: Path) -> None:
    """Every command that takes --ray, run without it."""
    code = f"""
import hashlib, sys
import numpy as np
from typer.testing import CliRunner
import gtsteer.cli, gtsteer.runs.solve, gtsteer.runs.units
from gtsteer.llm import embed

def encode(texts):  # an embedder without a model to load
    return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)
                     for t in texts]).astype(np.float32) / 255.0

embed.get_embedder = lambda name=None, **kw: embed.Embedder("test-hash", 32, encode, cache=False)
for name, args in {SERIAL_RUNS!r}.items():
    args = [{str(tmp_path)!r} + "/steer-train" if a == "STEER" else a for a in args]
    r = CliRunner().invoke(gtsteer.cli.app, [*args, "-o", {str(tmp_path)!r} + "/" + name])
    assert r.exit_code == 0, (name, r.output)
    print(name, "ray" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, check=True,
                          env={**os.environ, "GTSTEER_CACHE_DIR": str(tmp_path / "cache")})
    assert done.stdout.strip().splitlines()[-len(SERIAL_RUNS):] == [
        f"{name} False" for name in SERIAL_RUNS]
    assert (tmp_path / "evaluate" / "evaluate.json").is_file()


def test_solve_on_ray_equals_serial_and_a_rerun_makes_no_call(
    ray_node: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's done-when: 6 fruit instances, `--ray local --workers 2`."""
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "serial-cache"))
    serial = solve_cli(tmp_path / "serial")
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "ray-cache"))
    on_ray = solve_cli(tmp_path / "ray", "--ray", "local", "--workers", "2")
    assert on_ray["num_solved"] == 6 and on_ray["metrics"] == serial["metrics"]
    assert on_ray == serial  # everything, the model calls included (a fresh cache each)
    assert serial["llm_calls"]["new_calls"] > 0
    assert games_of(tmp_path / "ray") == games_of(tmp_path / "serial")
    again = solve_cli(tmp_path / "again", "--ray", "local", "--workers", "2")
    assert again["llm_calls"]["new_calls"] == 0
    assert again["llm_calls"]["cache_hits"] == serial["llm_calls"]["requests"]
    assert again["metrics"] == serial["metrics"]
    def keys(name: str) -> set[object]:
        return set(ResponseCache(tmp_path / name / "responses")._cache)

    assert keys("ray-cache") == keys("serial-cache")  # the same answers, stored once each


def test_a_crashing_utility_fails_only_its_instance_on_ray(
    ray_node: None, tmp_path: Path
) -> None:
    data = yaml.safe_load(MIXED_2X2.read_text())
    data["params"] = {"crash_instances": [1]}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data))
    summary = gtsteer.solve(spec, llm=LLM(backend=ConstantBackend()), games=3, iterations=100,
                            out=tmp_path / "o", quiet=True, ray=ON_RAY)
    assert summary.instances == [0, 2]
    assert [(f.instance, f.stage) for f in summary.failures] == [(1, "expand")]
    assert summary.failures[0].reason == "ZeroDivisionError: utility bug (injected)"


def test_two_ray_runs_sharing_a_cache_leave_it_whole(ray_node: None, tmp_path: Path) -> None:
    """Two drivers' runs at once into one cache: afterwards each rerun is all hits."""
    cache = tmp_path / "shared"
    runs = {seed: tmp_path / f"run{seed}" for seed in (1, 2)}

    def run(seed: int) -> None:
        gtsteer.solve(FRUIT, llm=LLM("fake", cache=ResponseCache(cache)), games=2, seed=seed,
                      iterations=10, out=runs[seed], quiet=True, ray=ON_RAY)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed, out in runs.items():
        first = json.loads((out / "summary.json").read_text())
        again = gtsteer.solve(FRUIT, llm=LLM("fake", cache=ResponseCache(cache)), games=2,
                              seed=seed, iterations=10, out=tmp_path / f"again{seed}", quiet=True)
        assert first["num_solved"] == 2
        assert again.llm_calls.new_calls == 0
        assert again.metrics.model_dump() == first["metrics"]


@pytest.mark.parametrize("name", list(SERIAL_RUNS))
def test_workers_needs_ray_local(name: str, tmp_path: Path) -> None:
    args = [*SERIAL_RUNS[name], "-o", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--workers", "2"])
    assert result.exit_code == 2 and "only with --ray local" in result.output
    result = CliRunner().invoke(app, [*args, "--ray", "auto", "--workers", "2"])
    assert result.exit_code == 2 and "--ray local" in result.output


def test_rate_limiter_holds_the_limit_and_takes_back_a_dead_holders_slot() -> None:
    from gtsteer.runs.ray_pool import RateLimiter

    async def scenario() -> list[int]:
        limiter = RateLimiter(max_in_flight=1, per_minute=None, lease_s=3600.0)
        first, _ = await limiter.acquire_waited()
        waiting = asyncio.ensure_future(limiter.acquire_waited())
        await asyncio.sleep(0.2)
        blocked = not waiting.done()
        limiter.release(first)
        second, _ = await waiting
        limiter.gate._held[second] = 0.0  # its holder died: the lease has run out
        third, _ = await limiter.acquire_waited()
        return [int(blocked), first, second, third]

    assert asyncio.run(scenario()) == [1, 0, 1, 2]


def test_a_served_models_requests_pass_the_shared_limiter(ray_node: None) -> None:
    import ray

    from gtsteer.llm.backends import FakeBackend
    from gtsteer.runs.ray_pool import GatedBackend, RateLimiter

    limiter = ray.remote(RateLimiter).remote(1, None, 60.0)
    gated = LLM(backend=GatedBackend(FakeBackend("fake"), limiter), use_cache=False)
    texts = [gated.generate_sync(f"hello {i}", seed=i).text for i in range(3)]
    plain = LLM("fake", use_cache=False)
    assert texts == [plain.generate_sync(f"hello {i}", seed=i).text for i in range(3)]
    assert ray.get(limiter.counts.remote()) == (0, 3)  # 3 started, every slot given back


@pytest.mark.parametrize("name", list(SERIAL_RUNS))
def test_help_names_the_ray_extra_intact(name: str) -> None:
    """Typer renders help as rich markup, where a bare `[ray]` is a style tag and vanishes."""
    command = [word for word in SERIAL_RUNS[name] if not word.endswith(".yaml")][:2]
    command = command if command[0] in ("eval", "werewolf") else command[:1]
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "pip install 'gtsteer[ray]'" in result.output
