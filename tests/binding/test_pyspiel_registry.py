"""Processes that registered gtsteer's pyspiel games exit cleanly, whatever Python frees first.

OpenSpiel keeps registered factories in a C++ static map destroyed after Python has shut down;
if it holds a factory's last reference then, the process aborts at exit (status 134). A long
pytest run got there through finalisation order; deleting the module's own reference gets
there on purpose.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RAW_MODULE = '''
import pyspiel
def factory(params):
    raise RuntimeError("never built")
pyspiel.register_game(pyspiel.GameType(
    short_name="raw_registry_probe", long_name="probe",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM, reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2, min_num_players=2, provides_information_state_string=False,
    provides_information_state_tensor=False, provides_observation_string=False,
    provides_observation_tensor=False, parameter_specification={}), factory)
'''


def run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=120)


def test_the_registry_aborts_a_process_that_left_it_the_last_reference(tmp_path: Path) -> None:
    """The defect itself (if a pyspiel release fixes it, gtsteer's workaround can go)."""
    (tmp_path / "raw_probe.py").write_text(RAW_MODULE)
    out = run("import raw_probe\ndel raw_probe.factory\nprint('done')", tmp_path)
    assert out.stdout.strip() == "done"
    assert out.returncode == -6 and "PyThreadState_Get" in out.stderr


@pytest.mark.parametrize("module", ["gtsteer.binding.loader", "gtsteer.werewolf.steer_game"])
def test_gtsteer_registered_games_let_the_process_exit_cleanly(module: str) -> None:
    out = run(f"import {module} as m\ndel m._from_params\nprint('done')", ROOT)
    assert out.stdout.strip() == "done"
    assert out.returncode == 0, out.stderr
    assert "Fatal Python error" not in out.stderr
