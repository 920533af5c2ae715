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
from solve_helpers import MIXED_2X2

import gtsteer.runs
from gtsteer.domains import load_spec
from gtsteer.runs.context import DRIVERS, Options, RunContext
from gtsteer.runs.executor import Executor
from gtsteer.runs.output import RunResult

#: Import every runs module, so each driver has registered itself (`@driver`).
MODULES = [importlib.import_module(f"gtsteer.runs.{info.name}")
           for info in pkgutil.iter_modules(gtsteer.runs.__path__)]
#: The old plain-argument spellings of the drivers: the package-root API (`gtsteer.solve`,
#: `psro`, `imitate`, `export`) and `run(config, ctx, options)` replaced them.
PLAIN_SPELLINGS = {"solve_config", "psro_config", "imitate_config", "export_config",
                   "steer_train", "evaluate", "measure_steering", "measure_reward",
                   "evaluate_verdict", "steer_heldout", "run_labelled", "measure_labelled"}
ROOT = Path(gtsteer.runs.__file__).resolve().parents[2]
CLI = Path(gtsteer.runs.__file__).parent.parent / "cli"
#: The CLI modules of those commands (`llm`, `instances` and the Werewolf game commands call
#: no driver and build their own clients).
DRIVEN = {"solve", "psro", "imitate", "export", "eval", "eval_verdict", "werewolf_steer",
          "play", "evaluate"}


def takes_a_context(fn: object) -> bool:
    """Whether `fn` has a `RunContext` parameter (annotations read unevaluated)."""
    return inspect.isfunction(fn) and any(
        a in (RunContext, "RunContext") for a in inspect.get_annotations(fn).values())


def options_of(fn: object) -> object:
    return typing.get_type_hints(fn).get("options")


def test_the_commands_have_registered_drivers() -> None:
    assert {"solve", "psro", "imitate", "export", "eval steering", "eval reward",
            "eval reward --labelled", "eval judge", "eval verdict", "play", "evaluate",
            "werewolf steer-train", "werewolf evaluate"} <= set(DRIVERS)


@pytest.mark.parametrize("command", sorted(DRIVERS))
def test_every_driver_is_run_config_ctx_options_returning_a_run_result(command: str) -> None:
    run = DRIVERS[command]
    params = list(inspect.signature(run).parameters.values())
    assert [p.name for p in params] == ["config", "ctx", "options"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
    hints = typing.get_type_hints(run)
    assert hints["ctx"] is RunContext
    options = hints["options"]
    assert issubclass(options, Options)
    assert options.model_config.get("extra") == "forbid" and options.model_config.get("frozen")
    assert issubclass(hints["return"], RunResult)


def _inner_types(hint: object) -> list[object]:
    """`hint` and every type inside it (`str | Embedder | None` gives all three)."""
    return [hint, *(t for arg in typing.get_args(hint) for t in _inner_types(arg))]


@pytest.mark.parametrize("command", sorted(DRIVERS))
def test_every_driver_s_options_hold_data_only(command: str) -> None:
    """Options are data (issue 58): live objects (an `Embedder`, a chooser, a callback) travel
    in the run context. A field typed `Any`, a callable or an arbitrary class has no place:
    the model allows no arbitrary types, and has a JSON schema."""
    options = typing.get_type_hints(DRIVERS[command])["options"]
    assert not options.model_config.get("arbitrary_types_allowed"), options.__name__
    for name, spec in options.model_fields.items():
        assert not any(t is typing.Any for t in _inner_types(spec.annotation)), (
            f"{options.__name__}.{name}: {spec.annotation}")
    assert options.model_json_schema()["title"] == options.__name__  # a callable has none


def test_nothing_that_takes_a_run_context_escapes_the_registry() -> None:
    """A public runs function with a context is a registered driver, or its module's driver
    without the files (`measure`: the same options, the same shape); found by what it takes,
    not by its name."""
    registered = {id(fn) for fn in DRIVERS.values()}
    found = []
    for module in MODULES:
        drivers = [options_of(fn) for fn in DRIVERS.values() if fn.__module__ == module.__name__]
        for name, fn in vars(module).items():
            if (name.startswith("_") or not takes_a_context(fn)
                    or fn.__module__ != module.__name__ or id(fn) in registered):
                continue
            if options_of(fn) not in drivers or [*inspect.signature(fn).parameters] != [
                    "config", "ctx", "options"]:
                found.append(f"{module.__name__}.{name}")
    assert found == []


def test_the_cli_calls_only_registered_drivers() -> None:
    """Every runs function the CLI calls with a run context is a registered driver."""
    registered = {id(fn) for fn in DRIVERS.values()}
    called = []
    for path in sorted(CLI.glob("*.py")):
        modules = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gtsteer.runs"):
                source = importlib.import_module(node.module or "")
                for alias in node.names:
                    named = getattr(source, alias.name)
                    if inspect.ismodule(named):
                        modules[alias.asname or alias.name] = named
                    elif takes_a_context(named):
                        called.append((path.name, named))
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in modules):
                named = getattr(modules[node.value.id], node.attr)
                if takes_a_context(named):
                    called.append((path.name, named))
    assert called and all(id(fn) in registered for _, fn in called), [
        f"{where}: {fn.__module__}.{fn.__name__}" for where, fn in called
        if id(fn) not in registered]


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


def test_nothing_calls_a_plain_spelling_and_none_is_left() -> None:
    """The product, the lab, tests and scripts use the package-root API or the drivers."""
    files = [p for folder in ("gtsteer", "lab", "tests", "scripts")
             for p in (ROOT / folder).rglob("*.py") if p.name != "test_driver_shape.py"]
    assert [hit for path in sorted(files) for hit in _plain_calls(path)] == []
    for module in MODULES:
        assert not PLAIN_SPELLINGS & set(vars(module)) - {"evaluate"}, module.__name__
