"""The package as a library user meets it: `--version`, and `import gtsteer` alone registering
the dialogue game with pyspiel (as OpenSpiel's and Gymnasium's games register at import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app

ROOT = Path(__file__).resolve().parents[2]


def test_version_flag_prints_the_package_version() -> None:
    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == f"gtsteer {gtsteer.__version__}"


def test_the_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert version("gtsteer") == gtsteer.__version__


def test_a_bare_import_registers_the_dialogue_game(tmp_path: Path) -> None:
    """pyspiel.load_game("gtsteer_dialogue") right after `import gtsteer`, in a fresh process
    outside the repository, with no parameters: the default game is a shipped config's."""
    code = ("import gtsteer, pyspiel\n"
            "game = pyspiel.load_game('gtsteer_dialogue')\n"
            "state = game.new_initial_state()\n"
            "print(game.num_players(), game.num_distinct_actions(), state.is_terminal())\n")
    env = {"PYTHONPATH": str(ROOT), "GTSTEER_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=False, env=env)
    assert out.returncode == 0, out.stderr
    players, actions, terminal = out.stdout.split()
    assert (players, terminal) == ("2", "False") and int(actions) > 1
