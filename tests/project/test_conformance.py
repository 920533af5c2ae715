"""Every shipped config (gtsteer/configs/) passes the conformance check and replays its recorded
playthrough;
every game gtsteer registers with pyspiel has a playthrough; the import layers hold.

Parametrized over gtsteer/configs/*.yaml at collection time, so a new domain is checked as soon as
its
YAML exists. Record (or, after a deliberate change, re-record) playthroughs with
`python -m lab playthroughs [gtsteer/configs/x.yaml]`.
"""

from __future__ import annotations

import ast
import difflib
import graphlib
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import pyspiel
import pytest

from gtsteer.checks import (
    CheckWarning,
    ConformanceError,
    check_game,
    check_spec,
    echo_rate_warnings,
    read_playthrough,
    reduced_spec,
    replay,
)
from gtsteer.domains import BUILTIN, game_from_params, load_spec
from gtsteer.llm import LLM
from gtsteer.testing import EchoingFake

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "gtsteer" / "configs").glob("*.yaml"))
PLAYTHROUGHS = ROOT / "tests" / "data" / "playthroughs"
#: The playthrough of each gtsteer game that is not a config
#: (tests/werewolf/test_werewolf_steering.py).
OTHER_GAMES = {"gtsteer_werewolf_playstyle": "werewolf_playstyle.txt"}


def check_config(config: Path, llm: LLM):
    return check_spec(load_spec(config), str(config), llm)


def test_there_are_configs() -> None:
    assert CONFIGS, "gtsteer/configs/*.yaml is empty"


def _demo_configs() -> list[str]:
    recipe = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    return [w for w in recipe.split() if w.endswith(".yaml")]


def test_the_makefile_demo_config_exists() -> None:
    configs = _demo_configs()
    assert configs and all((ROOT / c).is_file() for c in configs), configs


def test_bench_solve_times_the_makefile_demo() -> None:
    from lab.bench import bench_solve

    assert _demo_configs() == [bench_solve.DEMO_CONFIG]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_config_conforms(config: Path) -> None:
    # The echoing test model repeats every instruction, so the stripping is exercised on this
    # domain's own instruction templates. Its echo-rate warning is the warning tier's own test.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckWarning)
        report = check_config(config, LLM(backend=EchoingFake()))
    assert report.histories > 1 and report.info_states > 0
    assert report.cfr_backend.startswith("open_spiel C++")


def test_an_echoing_model_is_warned_about_not_failed() -> None:
    # The warning tier: echoed instructions are stripped (the hard checks pass), and a model
    # that echoes most of them is reported, as PettingZoo's api_test warns for soft problems.
    fruit = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
    with pytest.warns(CheckWarning, match="repeated their instruction"):
        report = check_config(fruit, LLM(backend=EchoingFake()))
    assert report.echoed_messages > report.messages / 2 and len(report.warnings) == 1
    quiet = check_config(fruit, LLM("fake"))
    assert quiet.echoed_messages <= quiet.messages / 2 and quiet.warnings == []


def test_the_echo_rate_limit_is_a_share_of_messages() -> None:
    game = SimpleNamespace(messages=dict.fromkeys("abcd", "x"), echoes=set("abc"))
    with pytest.warns(CheckWarning, match="3 of 4 messages"):
        assert len(echo_rate_warnings(game, "g", limit=0.5)) == 1
    game.echoes = set("ab")
    assert echo_rate_warnings(game, "g", limit=0.5) == []


def _replayed(recorded: str) -> str:
    """The recorded actions of a dialogue playthrough played again on the game its header
    names (the config path in the header is relative to the repository)."""
    params = read_playthrough(recorded).params()
    game = game_from_params({**params, "config": str(ROOT / params["config"])})
    return replay(recorded, game)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_playthrough_replays_its_recorded_actions(config: Path) -> None:
    recorded = PLAYTHROUGHS / f"{config.stem}.txt"
    command = f"python -m lab playthroughs gtsteer/configs/{config.name}"
    assert recorded.exists(), f"no recorded playthrough for {config.name}: run `{command}`"
    expected = recorded.read_text(encoding="utf-8")
    header = read_playthrough(expected).header
    assert header["config"] == f"gtsteer/configs/{config.name}" and header["model"] == "fake"
    fresh = _replayed(expected)
    if fresh != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), fresh.splitlines(True),
                                            "recorded", "now", n=2))  # fmt: skip
        pytest.fail(f"{config.name} plays differently from its recording (if intended, run "
                    f"`{command}`):\n{diff[:4000]}")  # fmt: skip


def test_a_replay_follows_the_file_not_a_seed() -> None:
    # Another recorded action at the last decision: the replay takes it from the file, and
    # the text changes from that step on only (OpenSpiel's playthroughs replay the same way).
    recorded = (PLAYTHROUGHS / "trade_fruit_tone.txt").read_text(encoding="utf-8")
    lines = recorded.splitlines(True)
    last = max(i for i, ln in enumerate(lines) if ln.startswith("action: ") and "(" in ln
               and "sample" not in ln)
    action = int(lines[last].split()[1])
    lines[last] = f"action: {(action + 1) % 4} (edited)\n"
    fresh = _replayed("".join(lines))
    assert fresh.splitlines()[:last] == recorded.splitlines()[:last]
    assert fresh.splitlines()[last].startswith(f"action: {(action + 1) % 4} (")
    assert fresh != recorded


def test_every_registered_game_and_domain_has_a_playthrough() -> None:
    # OpenSpiel's test_all_games_tested: a game registered without a recording fails here.
    import gtsteer.werewolf.steer_game  # noqa: F401  registers the playstyle game

    ours = [n for n in pyspiel.registered_names() if n.startswith("gtsteer_")]
    assert "gtsteer_dialogue" in ours and "gtsteer_werewolf_playstyle" in ours
    missing = [n for n in ours if n != "gtsteer_dialogue"
               and not (PLAYTHROUGHS / OTHER_GAMES.get(n, f"{n}.txt")).exists()]
    missing += [c.name for c in CONFIGS if not (PLAYTHROUGHS / f"{c.stem}.txt").exists()]
    assert missing == [], f"no playthrough for {missing}: run python -m lab playthroughs"
    played = {load_spec(c).domain for c in CONFIGS}
    assert sorted(d.name for d in BUILTIN if d.name not in played) == []


def test_the_check_catches_colliding_history_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    from gtsteer.binding import DialogueState, make_game, make_instance
    from gtsteer.domains import load_spec

    monkeypatch.setattr(DialogueState, "__str__", lambda self: "\n".join(
        t.text for t in self.turns))  # the old, transcript-only string
    spec = load_spec(CONFIGS[0])
    game = make_game(spec, make_instance(spec, 0), "fake")
    with pytest.raises(ConformanceError, match="unique history strings"):
        check_game(game, "x")


def test_the_check_catches_an_unstripped_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    import gtsteer.binding.game as game_module
    from gtsteer.binding import make_game, make_instance
    from gtsteer.domains import load_spec

    monkeypatch.setattr(game_module, "strip_instruction_echo", lambda text, parts: (text, False))
    spec = load_spec(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
    game = make_game(spec, make_instance(spec, 0), LLM(backend=EchoingFake()))
    with pytest.raises(ConformanceError, match="no instruction echo"):
        check_game(game, "x")


def test_big_configs_are_checked_on_a_smaller_variant() -> None:
    from gtsteer.domains import load_spec

    spec = load_spec(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
    big = spec.model_copy(update={"num_max_replies": 4})
    small, notes = reduced_spec(big, max_leaves=4096)
    assert notes and small.num_llm_seeds == 1
    assert reduced_spec(spec)[1] == []  # the fruit tree (64 leaves) is checked as it is


def test_a_trimmed_variant_keeps_only_its_values_definitions() -> None:
    from gtsteer.domains import load_spec

    spec = load_spec(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml")
    assert set(spec.instruction_definitions["tone"]) == {"calm", "assertive", "submissive"}
    big = spec.model_copy(update={"num_max_replies": 8})  # 4^16 leaves: actions get trimmed
    small, notes = reduced_spec(big, max_leaves=4096)
    assert "actions -> one value and any per key" in notes
    assert small.actions["tone"] == ["calm", "any"]
    assert small.instruction_definitions == {"tone": {"calm": spec.instruction_definitions[
        "tone"]["calm"]}}


def test_the_check_raises_a_conformance_error_for_a_foreign_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A runtime check, not an `assert` (which `python -O` drops).
    import pyspiel

    from gtsteer.checks import dialogue

    monkeypatch.setattr(dialogue, "expand_sync", lambda game, progress: type(
        "Report", (), {"failed": False})())
    with pytest.raises(ConformanceError, match="`DialogueState` failed: a .*State in the tree"):
        check_game(pyspiel.load_game("kuhn_poker"), "x")


_IMPORTERS = {"import_module", "__import__"}


def gtsteer_imports(path: Path, package: str = "gtsteer") -> list[str]:
    """Every `package` module (gtsteer's by default) `path` imports: import statements (also
    inside functions and TYPE_CHECKING blocks) and string imports. A file that calls
    `importlib.import_module` or `__import__` is taken to import every module name of `package`
    its strings spell (also one held in a variable, `for m in ("gtsteer.domains", ...)`, or an
    f-string's head)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append(node.module or "")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            dynamic = dynamic or name in _IMPORTERS
    if dynamic:
        found += [node.value.rstrip(".") for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and re.fullmatch(rf"{package}(\.\w+)*\.?", node.value)]
    return [m for m in found if m == package or m.startswith(f"{package}.")]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _room(path: Path) -> str:
    rel = path.relative_to(ROOT / "gtsteer").parts
    return rel[0] if len(rel) > 1 else ""


def test_the_layer_scan_sees_string_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import importlib\n"
                      "def f(name):\n"
                      "    for module in ('gtsteer.domains', f'gtsteer.domains.{name}'):\n"
                      "        importlib.import_module(module)\n"
                      "    from gtsteer.llm import LLM\n")
    assert sorted(gtsteer_imports(source)) == ["gtsteer.domains", "gtsteer.domains",
                                               "gtsteer.llm"]
    source.write_text("__import__('gtsteer.runs')\n")
    assert gtsteer_imports(source) == ["gtsteer.runs"]


def test_binding_imports_nothing_above_it() -> None:
    # DESIGN.md: gtsteer/binding may import only gtsteer.llm (and itself), even lazily.
    upward = [f"{path.name}: {m}" for path in sorted((ROOT / "gtsteer" / "binding").glob("*.py"))
              for m in gtsteer_imports(path) if _package(m) not in ("binding", "llm")]
    assert upward == []


ROOMS = ("llm", "binding", "domains", "solvers", "imitation", "checks", "evals", "runs", "werewolf",
         "testing", "cli")


def design_may_import() -> dict[str, set[str]]:
    """docs/DESIGN.md's "may import" column, read from its table: each `gtsteer/<room>/` row,
    the rooms its last cell names ("nothing of gtsteer": none). Rooms that may import
    everything ("all of the above", "everything": runs/ and cli/) are left out."""
    rows = re.findall(r"^\| `gtsteer/(\w+)/` \|.*\| ([^|]*) \|$",
                      (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8"), re.MULTILINE)
    table = {}
    for room, cell in rows:
        if "all of the above" in cell or "everything" in cell:
            continue
        table[room] = {r for r in ROOMS if re.search(rf"\b{r}\b", cell)} - {room}
    return table


#: DESIGN.md's "may import" column (runs/ and cli/ may import everything).
MAY_IMPORT = design_may_import()


def test_the_layer_table_is_read_from_the_design_document() -> None:
    assert MAY_IMPORT == {"llm": set(), "binding": {"llm"}, "domains": {"binding", "llm"},
                          "solvers": {"binding", "llm"},
                          "imitation": {"solvers", "binding", "domains", "llm"},
                          "checks": {"binding", "solvers"},
                          "evals": {"llm", "binding", "solvers", "werewolf"},
                          "werewolf": {"llm", "binding", "imitation"},
                          "testing": {"llm"}}


def test_every_package_is_a_room_of_the_design_document() -> None:
    # A package without a row would escape the layer test below; runs/ and cli/ have rows that
    # allow everything, so they are the only rooms outside MAY_IMPORT.
    packages = {p.parent.name for p in (ROOT / "gtsteer").glob("*/__init__.py")}
    assert packages == set(ROOMS)
    assert set(ROOMS) - set(MAY_IMPORT) == {"runs", "cli"}


def test_every_room_imports_only_what_design_allows() -> None:
    wrong = [f"{path.relative_to(ROOT)}: {sorted(bad)}"
             for path in sorted((ROOT / "gtsteer").rglob("*.py")) if _room(path) in MAY_IMPORT
             if (bad := {_package(m) for m in gtsteer_imports(path)}
                 - MAY_IMPORT[_room(path)] - {_room(path)})]
    assert wrong == []


def test_the_product_never_imports_the_lab() -> None:
    # DESIGN.md: lab/ (benchmarks and studies, not in the wheel) may import gtsteer; no module
    # of gtsteer imports lab, even lazily or by a string.
    wrong = [f"{path.relative_to(ROOT)}: {m}" for path in sorted((ROOT / "gtsteer").rglob("*.py"))
             for m in gtsteer_imports(path, "lab")]
    assert wrong == []


def test_the_lab_scan_sees_an_import_of_the_lab(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from lab.bench import benchdoc\n    import labels\n")
    assert gtsteer_imports(source, "lab") == ["lab.bench"]


def test_no_import_circle_between_gtsteer_packages() -> None:
    # One arrow per (package, package it imports), every kind of import counted; the root
    # `gtsteer/__init__.py` (a lazy `load_game` shortcut) and `__main__` sit above every room.
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "gtsteer").rglob("*.py")):
        room = _room(path)
        if not room:
            continue
        targets = {_package(m) for m in gtsteer_imports(path)} - {room}
        graph.setdefault(room, set()).update(targets)
        assert "" not in targets, f"{path}: imports the root package, which imports every room"
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import circle between gtsteer packages: {' -> '.join(exc.args[1])}")


def runtime_imports(path: Path, root: Path, modules: set[str]) -> set[str]:
    """The gtsteer modules `path` imports when it runs (at the top or inside a function; not
    under `if TYPE_CHECKING:`, and not its own parent packages, which Python has imported
    first): `from a.b import c` imports `a.b`, and `a.b.c` too when that is a module."""
    own = path.relative_to(root).with_suffix("").parts
    parents = {".".join(own[:i]) for i in range(1, len(own))}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return (found & modules) - parents


def module_graph(root: Path) -> dict[str, set[str]]:
    """Each module of `root`/gtsteer -> the modules of it that it imports when it runs."""
    names = {p: ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
             for p in (root / "gtsteer").rglob("*.py")}
    modules = set(names.values())
    return {names[p]: runtime_imports(p, root, modules) - {names[p]} for p in names}


def test_no_import_circle_between_gtsteer_modules() -> None:
    """Module by module, lazy imports inside functions counted (a circle they hide still ties
    two modules into one)."""
    try:
        graphlib.TopologicalSorter(module_graph(ROOT)).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import circle between gtsteer modules: {' -> '.join(exc.args[1])}")


def test_the_module_scan_finds_a_circle_a_lazy_import_hides(tmp_path: Path) -> None:
    package = tmp_path / "gtsteer"
    (package / "runs").mkdir(parents=True)
    (package / "runs" / "__init__.py").write_text("")
    (package / "runs" / "a.py").write_text("from gtsteer.runs.b import B\nA = 1\n")
    (package / "runs" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gtsteer.runs import a\n"
        "def f():\n    from gtsteer.runs.a import A\n    return A\n")
    graph = module_graph(tmp_path)
    assert graph == {"gtsteer.runs": set(), "gtsteer.runs.a": {"gtsteer.runs.b"},
                     "gtsteer.runs.b": {"gtsteer.runs.a"}}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()


# ---- the local backend's modules (docs/DESIGN.md, "The local backend") ------------------------

LOCAL = ROOT / "gtsteer" / "llm" / "backends" / "local"
LOCAL_PACKAGE = "gtsteer.llm.backends.local"


def design_local_modules() -> dict[str, set[str]]:
    """docs/DESIGN.md's table of the local backend's modules: each module (by file stem), the
    sibling modules it may import ("all of the above": every row before it)."""
    text = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    section = text.split("### The local backend (`gtsteer/llm/backends/local/`)", 1)[1]
    rows = re.findall(r"^\| `(\w+)\.py` \|.*\| ([^|]*) \|$", section.split("\n## ", 1)[0],
                      re.MULTILINE)
    names = [module for module, _ in rows]
    return {module: set(names[:i]) if "all of the above" in cell
            else {n for n in names if re.search(rf"\b{n}\b", cell)} - {module}
            for i, (module, cell) in enumerate(rows)}


def local_modules_imported(tree: ast.AST) -> set[str]:
    """The local backend's modules a file imports, by stem; `__init__` for the package's own
    names (`from gtsteer.llm.backends.local import LocalBackend`, `from gtsteer.llm.backends
    import local`)."""
    stems = {p.stem for p in LOCAL.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {a.name for a in node.names}
            if node.module == LOCAL_PACKAGE:
                found |= names & stems
                found |= {"__init__"} if names - stems else set()
            elif node.module.startswith(LOCAL_PACKAGE + "."):
                found.add(node.module.split(".")[4])
            elif node.module == "gtsteer.llm.backends" and "local" in names:
                found.add("__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == LOCAL_PACKAGE:
                    found.add("__init__")
                elif alias.name.startswith(LOCAL_PACKAGE + "."):
                    found.add(alias.name.split(".")[4])
    return found


def imports_llama_cpp(tree: ast.AST) -> bool:
    return any(
        (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "llama_cpp")
        or (isinstance(node, ast.Import)
            and any(a.name.split(".")[0] == "llama_cpp" for a in node.names))
        for node in ast.walk(tree))


def test_the_local_scan_sees_every_kind_of_import() -> None:
    source = ("from gtsteer.llm.backends.local import LocalBackend, serial\n"
              "from gtsteer.llm.backends.local.models import EMBEDDED_MODELS\n"
              "def f():\n"
              "    import gtsteer.llm.backends.local.worker\n"
              "    from gtsteer.llm.backends import local\n"
              "    from llama_cpp import Llama\n")
    tree = ast.parse(source)
    assert local_modules_imported(tree) == {"__init__", "serial", "models", "worker"}
    assert imports_llama_cpp(tree)
    assert local_modules_imported(ast.parse("from gtsteer.llm.backends import fake\n")) == set()
    assert not imports_llama_cpp(ast.parse("import llama_cpp_tools\n"))


def test_every_local_backend_module_has_a_row_in_the_design_document() -> None:
    table = design_local_modules()
    assert set(table) == {p.stem for p in LOCAL.glob("*.py")}
    assert table["parts"] == set() and table["models"] == {"parts"}
    assert table["engine"] == {"chat", "sampling", "prefix_cache", "worker"}
    assert table["serial"] == {"engine"}
    assert table["__init__"] == set(table) - {"__init__"}


def test_each_local_backend_module_imports_only_the_siblings_design_allows() -> None:
    table = design_local_modules()
    wrong = [f"{path.name}: {sorted(bad)}" for path in sorted(LOCAL.glob("*.py"))
             if (bad := local_modules_imported(ast.parse(path.read_text(encoding="utf-8")))
                 - table[path.stem] - {path.stem})]
    assert wrong == []


def test_outside_the_local_backend_gtsteer_imports_only_its_package() -> None:
    """Its modules are free to move: everything else goes through the names `__init__`
    exports (what the Makefile, the benchmarks and the CLI use)."""
    wrong = [f"{path.relative_to(ROOT)}: {sorted(bad)}"
             for path in sorted((ROOT / "gtsteer").rglob("*.py")) if LOCAL not in path.parents
             if (bad := local_modules_imported(ast.parse(path.read_text(encoding="utf-8")))
                 - {"__init__"})]
    assert wrong == []


def test_in_the_llm_layer_only_the_local_backend_imports_llama_cpp() -> None:
    llm = ROOT / "gtsteer" / "llm"
    found = [path.relative_to(llm).as_posix() for path in sorted(llm.rglob("*.py"))
             if imports_llama_cpp(ast.parse(path.read_text(encoding="utf-8")))]
    assert found and all(name.startswith("backends/local/") for name in found), found
