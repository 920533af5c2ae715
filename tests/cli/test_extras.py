"""A command that needs an extra which is not installed stops with one line naming it (exit 2).

The venv has every extra; each test hides one module as a missing install would (a None entry
in sys.modules makes both `find_spec` and `import` fail), in this process or in a fresh one
where the module would otherwise already be imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM, MissingExtraError
from gtsteer.llm.extras import EXTRAS, require

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def error_line(output: str) -> str:
    """The one error line, the last thing printed (a run's notes may come before it)."""
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == lines[-1:], output
    return errors[0]


def test_the_default_llm_without_the_local_extra_says_install_it_or_pass_llm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    out = runner.invoke(app, ["solve", "schedule_meeting_dow", "--games", "1", "--quiet"])
    assert out.exit_code == 2
    line = error_line(out.output)
    assert "pip install 'gtsteer[local]'" in line and "--llm" in line


def test_the_python_api_raises_the_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingExtraError) as caught:
        LLM("local")
    assert caught.value.extra == "local" and isinstance(caught.value, ImportError)


def test_require_names_the_extra_and_passes_when_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    require("yaml", "core", "reading a config")  # installed: nothing happens
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'gtsteer\[web\]'"):
        require("uvicorn", "web", "The web app")
    assert set(EXTRAS) == {"local", "imitate", "web", "ray", "gambit"}


def cli_without(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`gtsteer ARGS` in a fresh interpreter where `module` is not installed."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from gtsteer.cli import app\n"
            f"app({list(args)!r}, prog_name='gtsteer')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_imitate_without_torch_names_the_imitate_extra(tmp_path: Path) -> None:
    out = cli_without("torch", "imitate", "trade_fruit_tone", "--llm", "fake", "--games", "5",
                      "--quiet", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "pip install 'gtsteer[imitate]'" in error_line(out.stderr)


def test_the_web_app_without_fastapi_names_the_web_extra(tmp_path: Path) -> None:
    out = cli_without("fastapi", "werewolf", "serve", "--llm", "fake", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "pip install 'gtsteer[web]'" in error_line(out.stderr)


def test_a_heldout_gain_without_sentence_transformers_names_the_extra(tmp_path: Path) -> None:
    out = cli_without("sentence_transformers", "solve", "trade_fruit_tone", "--llm", "fake",
                      "--games", "1", "--heldout", "--quiet", "--out", str(tmp_path / "run"),
                      cwd=tmp_path)
    assert "pip install 'gtsteer[imitate]'" in out.stderr + out.stdout
