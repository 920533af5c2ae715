"""The wheel as a researcher installs it: the core alone, on another Python, outside the repo.

Builds the wheel from this checkout's files (as a clean clone has them), installs it with its
core dependencies into a fresh venv of Python 3.13 or 3.12 (whichever the machine has;
GTSTEER_WHEEL_PYTHON names another), binary wheels only, so nothing compiles, and from an empty
folder runs the CLI, a short Python script and a bare pyspiel load. The venv is kept under
~/.cache/gtsteer/wheel-venvs/, keyed by the Python and the wheel's sha256, so a rerun on the
same code installs nothing; pip's own cache serves the downloads.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gtsteer

ROOT = Path(__file__).resolve().parents[2]
VENVS = Path.home() / ".cache" / "gtsteer" / "wheel-venvs"
#: Five lines a user writes: solve a shipped config by name from Python (the package-root API).
SCRIPT = """\
import gtsteer
r = gtsteer.solve("schedule_meeting_dow", llm="fake", games=1, quiet=True)
conv = r.metrics.nash_conv
print(r.domain, r.folder, conv.n, conv.mean >= 0, (r.folder / "summary.json").is_file())
print(r.usage.requests > 0, len(r.policies()[0]) > 0)
"""

pytestmark = pytest.mark.wheel


def other_python() -> Path | None:
    """A working Python 3.13 or 3.12 (this one is 3.11), or None. pyenv's shims are on PATH
    whether or not they run, so each candidate is asked for its version."""
    given = os.environ.get("GTSTEER_WHEEL_PYTHON")
    candidates = [Path(given)] if given else []
    for version in ("3.13", "3.12"):
        candidates += sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python3"))
        candidates += [Path(found) for found in [shutil.which(f"python{version}")] if found]
    for python in candidates:
        try:
            out = subprocess.run(
                [str(python), "-c", "import sys, venv; print(sys.version_info[:2])"],
                capture_output=True, text=True, timeout=60, check=False)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() in ("(3, 12)", "(3, 13)"):
            return python
    return None


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def build_wheel(dest: Path) -> Path:
    """The wheel of this checkout's files (tracked, and untracked but not ignored), built in a
    copy so that no build folder lands in the repository."""
    listed = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT, timeout=60)
    assert listed.returncode == 0, listed.stderr
    src = dest / "src"
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "-q", "-w", str(dest / "dist"), str(src)], dest,
                # the same files give the same wheel, so its hash keys the cached venv
                env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"})
    assert built.returncode == 0, built.stderr
    (wheel,) = (dest / "dist").glob("gtsteer-*.whl")
    return wheel


def core_venv(python: Path, wheel: Path) -> Path:
    """A venv of `python` with `wheel` and its core dependencies, binary wheels only."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
    tag = run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
              ROOT, timeout=60).stdout.strip()
    venv = VENVS / f"py{tag}-{digest}"
    if (venv / "ready").is_file():
        return venv
    for old in VENVS.glob(f"py{tag}-*"):  # one venv per Python: the latest code's, and
        shutil.rmtree(old, ignore_errors=True)  # a build a killed run left half done
    assert not venv.exists(), f"{venv} could not be removed"
    made = run([str(python), "-m", "venv", str(venv)], ROOT, timeout=300)
    assert made.returncode == 0, made.stderr
    installed = run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                     "--only-binary", ":all:", str(wheel)], ROOT)
    assert installed.returncode == 0, installed.stderr[-3000:]
    (venv / "ready").write_text(str(wheel.name))  # last: a killed build is never "ready"
    return venv


def test_the_wheel_holds_the_product_not_the_lab(tmp_path: Path) -> None:
    """Issue 58: the benchmarks and studies that write this repository's docs (lab/) are not
    shipped; the test doubles a user needs (gtsteer.testing) are."""
    import zipfile

    names = zipfile.ZipFile(build_wheel(tmp_path)).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"gtsteer"}
    assert "gtsteer/testing/loopback.py" in names and "gtsteer/testing/backends.py" in names
    assert not [n for n in names if n.startswith(("gtsteer/bench/", "gtsteer/studies/"))]
    assert not [n for n in names if "benchdoc" in n]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = other_python()
    if python is None:
        pytest.skip("no Python 3.12 or 3.13 on this machine (GTSTEER_WHEEL_PYTHON names one)")
    return core_venv(python, build_wheel(tmp_path_factory.mktemp("wheel")))


@pytest.fixture
def outside(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An empty folder outside the repository and an environment that knows nothing of it."""
    folder = tmp_path / "empty"
    folder.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(Path.home()),
           "GTSTEER_CACHE_DIR": str(tmp_path / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return folder, env


def test_the_core_install_has_neither_torch_nor_llama_cpp(venv: Path) -> None:
    probe = ("import importlib.util as u, json\n"
             "print(json.dumps({m: u.find_spec(m) is not None for m in"
             " ('torch', 'llama_cpp', 'sentence_transformers', 'fastapi', 'uvicorn', 'gtsteer',"
             " 'pyspiel', 'litellm')}))")
    out = run([str(venv / "bin" / "python"), "-c", probe], ROOT, timeout=120)
    assert json.loads(out.stdout) == {
        "torch": False, "llama_cpp": False, "sentence_transformers": False, "fastapi": False,
        "uvicorn": False, "gtsteer": True, "pyspiel": True, "litellm": True}


def test_the_cli_runs_a_shipped_config_from_an_empty_folder(
        venv: Path, outside: tuple[Path, dict[str, str]]) -> None:
    folder, env = outside
    gtsteer_bin = str(venv / "bin" / "gtsteer")
    version = run([gtsteer_bin, "--version"], folder, env, timeout=120)
    assert (version.returncode, version.stdout.strip()) == (0, f"gtsteer {gtsteer.__version__}")
    solved = run([gtsteer_bin, "solve", "schedule_meeting_dow", "--llm", "fake", "--games", "1",
                  "--quiet", "--out", "run"], folder, env, timeout=600)
    assert solved.returncode == 0, solved.stderr[-3000:]
    summary = json.loads((folder / "run" / "summary.json").read_text())
    assert summary["metrics"] is not None and summary["config"] == "schedule_meeting_dow"


def test_the_default_local_model_names_the_extra_it_needs(
        venv: Path, outside: tuple[Path, dict[str, str]]) -> None:
    folder, env = outside
    out = run([str(venv / "bin" / "gtsteer"), "solve", "schedule_meeting_dow", "--games", "1"],
              folder, env, timeout=300)
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]  # the one error line, after the run's notes
    assert last.startswith("error:") and "pip install 'gtsteer[local]'" in last, out.stderr
    assert "--llm" in last and out.stderr.count("error:") == 1


def test_python_solves_and_pyspiel_loads_after_a_bare_import(
        venv: Path, outside: tuple[Path, dict[str, str]]) -> None:
    folder, env = outside
    python = str(venv / "bin" / "python")
    (folder / "solve.py").write_text(SCRIPT)
    assert len(SCRIPT.splitlines()) == 5
    solved = run([python, "solve.py"], folder, env, timeout=600)
    assert (solved.returncode, solved.stdout.split()) == (0, [
        "schedule_meeting_dow", "results/schedule_meeting_dow-fake-0", "1", "True", "True",
        "True", "True"]), solved.stderr[-3000:]
    loaded = run([python, "-c", "import gtsteer, pyspiel; g = pyspiel.load_game("
                  "'gtsteer_dialogue'); print(g.num_players())"], folder, env, timeout=300)
    assert (loaded.returncode, loaded.stdout.strip()) == (0, "2"), loaded.stderr[-3000:]
