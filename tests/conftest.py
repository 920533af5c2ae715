"""Shared fixtures: every test gets its own response cache; the model file stays shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Assembled model weights are shared across tests (and with the user's cache).
os.environ.setdefault(
    "GTSTEER_MODEL_DIR",
    str(Path(os.environ.get("GTSTEER_CACHE_DIR") or Path.home() / ".cache" / "gtsteer") / "models"),
)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# A pytest-xdist worker starts with COLUMNS=80 in its environment; rich would fix the CLI's
# console at that width when it is imported, and a test giving the CLI a wider COLUMNS would
# still see 80. Without it, the console reads COLUMNS when it prints, as in a plain run.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from this run (tests/project/test_golden.py)")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache_dir = tmp_path / "gtsteer-cache"
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(cache_dir))
    return cache_dir


# `make test` runs pytest-xdist workers (`-n`, `--dist loadgroup`). Two llama.cpp processes on
# 2 cores are 10-20x slower than one, and two Ray clusters compete for the same cores and
# ports, so every test that loads the embedded model (marked `slow`) or starts Ray (in a
# tests/runs/test_ray*.py file, or marked `ray`) runs in one group, on one worker, one after
# another; the other workers share the rest.
SERIAL_GROUP = "model-and-ray"


def _starts_ray(item: pytest.Item) -> bool:
    return item.path.name.startswith("test_ray") or item.get_closest_marker("ray") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is not None or _starts_ray(item):
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
        elif item.get_closest_marker("wheel") is not None:
            # one worker builds the cached venv the wheel tests share (two raced on it)
            item.add_marker(pytest.mark.xdist_group("wheel"))
