"""Importing the CLI, the Werewolf server and the imitation types must not load torch.

torch costs every command ~2 s and ~200 MiB; it is imported only when a network is built,
trained, loaded or run (scipy.stats and scipy.optimize likewise only where they compute). Each
check runs in a fresh interpreter (this one has torch loaded).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def modules_after(code: str) -> set[str]:
    """The names in sys.modules after running `code` in a fresh interpreter from the repo root."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=True,
    )
    return set(out.stdout.split())


@pytest.mark.parametrize("module", [
    "gtsteer.cli",
    "gtsteer.werewolf.web.server",
    "gtsteer.werewolf.steering",
    "gtsteer.imitation",
    "gtsteer.imitation.policy",
    "gtsteer.imitation.evaluate",
    "gtsteer.imitation.dataset",
    "gtsteer.imitation.train_types",
    "gtsteer.runs.imitate",
    "gtsteer.runs.werewolf_steer",
])
def test_import_does_not_load_torch(module: str) -> None:
    loaded = modules_after(f"import {module}")
    assert module in loaded
    assert "torch" not in loaded


@pytest.mark.parametrize("module", ["gtsteer.llm.backends.local", "gtsteer.cli"])
def test_import_does_not_load_llama_cpp(module: str) -> None:
    """llama-cpp-python (and its shared library) loads when a local model does: `local.engine`
    imports it then, so a command that never runs the local model never pays for it."""
    loaded = modules_after(f"import {module}")
    assert {module, "gtsteer.llm.backends.local.engine"} <= loaded
    assert not {m for m in loaded if m.split(".")[0] == "llama_cpp"}


def test_cli_loads_scipy_stats_and_optimize_only_when_used() -> None:
    loaded = modules_after("import gtsteer.cli")
    assert not {"scipy.stats", "scipy.optimize"} & loaded
    assert "scipy.stats" in modules_after(
        "from gtsteer.solvers.metrics import mean_ci\nassert mean_ci([1.0, 2.0]).ci_low < 1.5"
    )


def test_train_policy_is_resolved_on_first_use() -> None:
    loaded = modules_after(
        "import sys\n"
        "import gtsteer.imitation as im\n"
        "assert 'train_policy' in dir(im) and 'train_policy' in im.__all__\n"
        "assert 'torch' not in sys.modules\n"
        "lazy = im.train_policy\n"
        "assert 'torch' in sys.modules\n"
        "from gtsteer.imitation.train import TrainConfig, train_policy\n"
        "assert lazy is train_policy and im.TrainConfig is TrainConfig"
    )
    assert "gtsteer.imitation.train" in loaded


def test_unknown_name_is_an_attribute_error() -> None:
    import gtsteer.imitation as im

    with pytest.raises(AttributeError, match="no_such_name"):
        im.no_such_name  # noqa: B018
