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


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache_dir = tmp_path / "gtsteer-cache"
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(cache_dir))
    return cache_dir
