"""A model backend written outside the package is named on the command line as
`--llm module:Class` (as a config names a plugin domain), built in the CLI and, on Ray, by each
worker from the same string; a bad reference is one line. And the model-string grammar gives
one answer to "does this model run in-process?"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM, FakeBackend, ModelConfigError, make_backend
from gtsteer.llm.backends import builds, in_process

ROOT = Path(__file__).resolve().parents[2]
FRUIT = "gtsteer/configs/trade_fruit_tone.yaml"

#: A user's backend: the fake's answers in capitals, logging which process built and called it.
MODULE = '''
import os

from gtsteer.llm import FakeBackend


def _log(event):
    with open(os.environ["LOUD_LOG"], "a") as f:
        f.write(f"{os.getpid()} {event}\\n")


class LoudFake(FakeBackend):
    kind = "loud_fake"

    def __init__(self, model):
        super().__init__(model)
        _log("built")

    async def complete(self, request, json_schema=None):
        _log("called")
        raw = await super().complete(request, json_schema)
        return raw if json_schema else raw.model_copy(update={"text": raw.text.upper()})


def not_a_class(model):
    return None
'''


def write_module(folder: Path) -> None:
    (folder / "loud_backend.py").write_text(textwrap.dedent(MODULE))


def solve_cli(tmp_path: Path, out: str, *extra: str) -> tuple[dict, list[tuple[int, str]]]:
    log = tmp_path / f"{out}.log"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "LOUD_LOG": str(log),
           "GTSTEER_CACHE_DIR": str(tmp_path / out / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "gtsteer", "solve", FRUIT, "--llm", "loud_backend:LoudFake",
         "--games", "2", "-q", "-o", str(tmp_path / out), *extra],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    events = [(int(pid), what) for pid, what in (line.split() for line in log.read_text()
                                                 .splitlines())]
    return json.loads((tmp_path / out / "summary.json").read_text()), events


def test_a_users_backend_solves_from_the_cli(tmp_path: Path) -> None:
    write_module(tmp_path)
    summary, events = solve_cli(tmp_path, "serial")
    assert summary["model"] == "loud_backend:LoudFake" and summary["num_solved"] == 2
    assert summary["roles"]["writer"]["model"] == "loud_backend:LoudFake"
    assert [what for _, what in events].count("built") == 1 and ("called" in dict(
        (w, p) for p, w in events))


@pytest.mark.ray
def test_a_users_backend_is_built_by_each_ray_worker(tmp_path: Path) -> None:
    write_module(tmp_path)
    serial, _ = solve_cli(tmp_path, "serial")
    on_ray, events = solve_cli(tmp_path, "ray", "--ray", "local", "--workers", "2")
    assert on_ray["metrics"] == serial["metrics"]
    builders = {pid for pid, what in events if what == "built"}
    callers = {pid for pid, what in events if what == "called"}
    # Workers built their own from the model string (not a pickled copy of the driver's).
    assert len(builders) >= 2 and callers and callers <= builders


def test_a_bad_reference_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("LOUD_LOG", str(tmp_path / "log"))
    runner = CliRunner()
    for model, words in (("loud_backend:Nope", "module 'loud_backend' has no 'Nope'"),
                         ("no_such_module_xyz:Backend", "cannot import 'no_such_module_xyz'"),
                         ("loud_backend:not_a_class",
                          "'not_a_class' is a function, not a gtsteer Backend class")):
        done = runner.invoke(app, ["solve", FRUIT, "--llm", model, "--games", "1", "-q",
                                   "-o", str(tmp_path / "out")], env={"COLUMNS": "400"})
        assert done.exit_code == 2, done.output
        line = done.output.strip().splitlines()[-1]  # after the tree-size note, if any
        assert line.startswith("error: ModelConfigError: ") and words in line, done.output
        assert f"model {model!r}" in line and "Traceback" not in done.output, line
    with pytest.raises(ModelConfigError, match="apply to served models"):
        make_backend("loud_backend:LoudFake", api_base="http://127.0.0.1:1/v1")


def test_one_grammar_says_which_models_run_in_process() -> None:
    for model in ("local", "local:smollm2-135m", "local:/m/x.gguf", "fake", "fake:other",
                  "my_pkg.backends:Mine"):
        assert in_process(model), model
    for model in ("openai/gpt-4o-mini", "ollama_chat/llama3.1:8b", "hosted_vllm/m",
                  "openrouter/meta-llama/llama-3-8b-instruct:free"):
        assert not in_process(model), model
    # The string rebuilds the backend it names (a Ray worker then builds its own); an object
    # no string names (a test double, a subclass) travels as it is.
    assert builds("fake", FakeBackend("fake"))
    assert not builds("fake", type("Sub", (FakeBackend,), {})("fake"))
    assert LLM("fake:x").model == "fake:x"
