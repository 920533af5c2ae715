"""Every command's driver has one shape: `run(config, ctx, options) -> RunResult` (issue 41).

`config` says what is played, `ctx` (a `RunContext`) where and with what (models by role,
endpoint, output folder, executor), `options` how: one pydantic model per command. The CLI
calls each driver through `run`, and resolves no model itself.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel
from solve_helpers import MIXED_2X2

import gtsteer.runs
from gtsteer.domains import load_spec
from gtsteer.runs.context import RunContext
from gtsteer.runs.executor import Executor
from gtsteer.runs.output import RunResult

#: Command -> its driver module.
DRIVERS = {
    "solve": "gtsteer.runs.solve",
    "psro": "gtsteer.runs.psro",
    "imitate": "gtsteer.runs.imitate",
    "export": "gtsteer.runs.export",
    "eval steering": "gtsteer.runs.eval_steering",
    "eval reward": "gtsteer.runs.eval_reward",
    "eval judge": "gtsteer.runs.eval_judge",
    "eval verdict": "gtsteer.runs.eval_verdict",
    "werewolf steer-train": "gtsteer.runs.werewolf_steer",
    "werewolf evaluate": "gtsteer.runs.werewolf_evaluate",
    "werewolf steer-heldout": "gtsteer.runs.werewolf_heldout",
    "werewolf styles": "gtsteer.runs.werewolf_styles",
    "play": "gtsteer.runs.play",
    "evaluate": "gtsteer.runs.evaluate_live",
}
#: The old plain-argument spellings of the drivers: the package-root API (`gtsteer.solve`,
#: `psro`, `imitate`, `export`) and `run(config, ctx, options)` replace them.
PLAIN_SPELLINGS = {"solve_config", "psro_config", "imitate_config", "export_config",
                   "steer_train", "evaluate", "measure_steering", "measure_reward",
                   "evaluate_verdict", "steer_heldout"}
#: Those kept as deprecated aliases, each while the benchmarks or studies (leaving for lab/)
#: still call it: module -> name.
DEPRECATED = {"gtsteer.runs.solve": "solve_config", "gtsteer.runs.psro": "psro_config",
              "gtsteer.runs.export": "export_config",
              "gtsteer.runs.eval_steering": "measure_steering",
              "gtsteer.runs.eval_verdict": "evaluate_verdict",
              "gtsteer.runs.werewolf_steer": "steer_train"}
ROOT = Path(gtsteer.runs.__file__).resolve().parents[2]
CLI = Path(gtsteer.runs.__file__).parent.parent / "cli"
#: The CLI modules of those commands (`llm`, `instances` and the Werewolf game commands call
#: no driver and build their own clients).
DRIVEN = {"solve", "psro", "imitate", "export", "eval", "eval_verdict", "werewolf_steer",
          "werewolf_heldout", "play", "evaluate"}


@pytest.mark.parametrize("command", list(DRIVERS))
def test_every_driver_is_run_config_ctx_options_returning_a_run_result(command: str) -> None:
    run = importlib.import_module(DRIVERS[command]).run
    params = list(inspect.signature(run).parameters.values())
    assert [p.name for p in params] == ["config", "ctx", "options"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
    hints = typing.get_type_hints(run)
    assert hints["ctx"] is RunContext
    options = hints["options"]
    assert issubclass(options, BaseModel) and options.model_config.get("extra") == "forbid"
    assert issubclass(hints["return"], RunResult)


def test_every_driver_module_is_listed() -> None:
    """A new driver (a runs module with a `run`) joins DRIVERS, and so the shape test."""
    found = set()
    for info in pkgutil.iter_modules(gtsteer.runs.__path__):
        module = importlib.import_module(f"gtsteer.runs.{info.name}")
        run = getattr(module, "run", None)
        if inspect.isfunction(run) and run.__module__ == module.__name__:
            found.add(module.__name__)
    assert found == set(DRIVERS.values())


def test_the_cli_calls_drivers_through_run_and_resolves_no_model() -> None:
    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gtsteer.runs"):
                names = {alias.name for alias in node.names}
                assert not names & PLAIN_SPELLINGS, f"{path.name} imports {names & PLAIN_SPELLINGS}"
                assert "pick_roles" not in names, path.name
            if (isinstance(node, ast.Attribute) and node.attr in ("resolve", "check")
                    and isinstance(node.value, ast.Name) and "endpoint" in node.value.id
                    and path.stem in DRIVEN):
                pytest.fail(f"{path.name}:{node.lineno} resolves a model (RunContext.roles does)")


def test_a_context_resolves_the_roles_and_the_folder_in_one_place() -> None:
    spec = load_spec(MIXED_2X2)
    ctx = RunContext.of(llm="fake", out=None, progress=False)
    writer, others, roles = ctx.roles(spec, "reader", "proposer")
    assert writer.model == "fake"
    assert others["reader"] is writer and others["proposer"] is writer  # one client, one meter
    assert {r: (rec.model, rec.source) for r, rec in roles.items()} == {
        "writer": ("fake", "given"), "reader": ("fake", "writer"),
        "proposer": ("fake", "writer")}
    assert ctx.folder("solve", MIXED_2X2, writer, 3) == Path("results") / (
        f"{Path(MIXED_2X2).stem}-fake-3")
    assert RunContext.of(out="x").folder("solve", MIXED_2X2, writer, 3) == Path("x")
    assert ctx.executor == Executor(None, False) and ctx.ray is None and not ctx.progress


def test_no_driver_keeps_a_ray_copy_of_its_work() -> None:
    """Serial and Ray are one code path: a driver hands its units to the executor, and no
    runs module but the executor and the Ray side (`ray_pool`) knows how Ray runs them."""
    runs = Path(gtsteer.runs.__file__).parent
    for path in sorted(runs.glob("*.py")):
        if path.stem in ("executor", "ray_pool"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert not node.name.endswith("_on_ray"), f"{path.name}: {node.name}"
            if isinstance(node, ast.ImportFrom):
                assert node.module != "gtsteer.runs.ray_pool", path.name


def _plain_calls(path: Path) -> list[str]:
    """Where `path` imports or calls a plain spelling (a name or an attribute)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gtsteer.runs"):
            found += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names
                      if a.name in PLAIN_SPELLINGS]
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in PLAIN_SPELLINGS - {"evaluate"}:  # `page.evaluate` is Playwright's
                found.append(f"{path.name}:{node.lineno} calls {name}")
    return found


def test_nothing_but_the_lab_rooms_calls_a_plain_spelling() -> None:
    """The product, its tests and scripts use the package-root API or `run`; only
    gtsteer/bench and gtsteer/studies (moving to lab/) still call the deprecated aliases."""
    files = [p for folder in ("gtsteer", "tests", "scripts") for p in (ROOT / folder).rglob("*.py")
             if not {"bench", "studies"} & set(p.relative_to(ROOT).parts)
             and p.name != "test_driver_shape.py"]
    assert [hit for path in sorted(files) for hit in _plain_calls(path)] == []


def test_the_plain_spellings_left_are_deprecated_aliases() -> None:
    for module, name in DEPRECATED.items():
        assert "deprecated" in importlib.import_module(module).__dict__[name].__doc__.lower()
    for name in PLAIN_SPELLINGS - set(DEPRECATED.values()):
        for module in DRIVERS.values():
            assert not hasattr(importlib.import_module(module), name), f"{module}.{name}"


def test_the_solve_alias_warns_and_runs_the_api(tmp_path: Path) -> None:
    from gtsteer.runs.solve import solve_config

    with pytest.warns(DeprecationWarning, match="use gtsteer.solve"):
        summary = solve_config(MIXED_2X2, "fake", iterations=10, out_dir=tmp_path, progress=False)
    assert summary.folder == tmp_path and summary.usage is not None
