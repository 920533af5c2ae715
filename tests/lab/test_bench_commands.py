"""The benchmarks and studies are the lab's commands (`python -m lab NAME`, lab/__main__.py):
every lab module with a `main` is registered under the name its own usage line and doc sections
give, the docs name only registered commands and no retired `gtsteer bench|study|table1`, no
file edits `sys.path`, and scripts/ keeps repository tooling only. Nothing here runs a
benchmark."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gtsteer.cli import app
from lab.__main__ import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
#: `python -m lab NAME` -> the module whose `main` it runs (not the `module:function` entries).
REGISTERED = {f"python -m lab {n}": m for n, m in COMMANDS.items() if ":" not in m}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_every_benchmark_and_study_with_a_main_is_a_command() -> None:
    mains = {module_name(p) for room in ("bench", "studies")
             for p in sorted((ROOT / "lab" / room).glob("*.py"))
             if re.search(r"^def main\(", p.read_text(encoding="utf-8"), re.MULTILINE)}
    assert mains == set(REGISTERED.values())


@pytest.mark.parametrize("command", sorted(REGISTERED))
def test_a_command_is_the_name_its_module_gives_itself(command: str) -> None:
    assert importlib.import_module(REGISTERED[command]).COMMAND == command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_name_runs_a_function_of_the_lab(name: str) -> None:
    module, _, function = COMMANDS[name].partition(":")
    assert module.startswith("lab.") and callable(getattr(importlib.import_module(module),
                                                          function or "main"))


@pytest.mark.parametrize("name", ["web", "verdict", "table1", "werewolf-fresh"])
def test_the_flags_after_the_name_are_the_modules_own(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m lab {name} [-h]")


def test_an_unknown_name_is_refused_with_the_known_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope"]) == 2
    err = capsys.readouterr().err
    assert "no benchmark or study 'nope'" in err and "table1" in err


def test_the_product_has_no_lab_commands() -> None:
    for name in ("bench", "study", "table1"):
        done = CliRunner().invoke(app, [name, "--help"])
        assert done.exit_code == 2 and "No such command" in done.output


def test_python_m_lab_runs_from_the_repo_root() -> None:
    done = subprocess.run([sys.executable, "-m", "lab", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m lab NAME")
    bare = subprocess.run([sys.executable, "-m", "lab"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert bare.returncode == 2 and "table1" in bare.stdout  # no NAME: the names, exit 2


def test_the_docs_name_only_registered_commands() -> None:
    texts = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").rglob("*.md"))]
    texts = [p for p in texts if "data" not in p.relative_to(ROOT).parts]
    lab_names = "|".join(re.escape(n) for n in sorted(COMMANDS, key=len, reverse=True))
    named = {(path.relative_to(ROOT).as_posix(), m.group(0)) for path in texts
             for m in re.finditer(r"python -m lab [a-z][a-z0-9-]*|gtsteer (?:bench|study|table1)",
                                  path.read_text(encoding="utf-8"))}
    assert named
    unknown = sorted(n for n in named if not re.fullmatch(rf"python -m lab (?:{lab_names})", n[1]))
    assert unknown == []


def _edits_sys_path(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        target = node.func.value if isinstance(node, ast.Call) and isinstance(
            node.func, ast.Attribute) else node.value if isinstance(node, ast.Subscript) else None
        if isinstance(target, ast.Attribute) and target.attr == "path" and isinstance(
                target.value, ast.Name) and target.value.id == "sys":
            return True
    return False


def test_no_file_edits_sys_path() -> None:
    files = [p for d in ("gtsteer", "lab", "tests", "scripts")
             for p in sorted((ROOT / d).rglob("*.py"))]
    edits = [p.relative_to(ROOT).as_posix() for p in files
             if _edits_sys_path(ast.parse(p.read_text(encoding="utf-8")))]
    assert edits == []


def test_the_sys_path_scan_sees_an_edit() -> None:
    assert _edits_sys_path(ast.parse("import sys\nsys.path.insert(0, 'scripts')\n"))
    assert _edits_sys_path(ast.parse("import sys\nsys.path[:0] = ['x']\n"))
    assert not _edits_sys_path(ast.parse("import os, sys\nos.pathsep.join(sys.argv)\n"))


def private_uses(tree: ast.AST) -> list[str]:
    """`from gtsteer.x import _y`, and `name._y` on a name imported from gtsteer (a module such
    as `local` in `from gtsteer.llm.backends import local`)."""
    found, names = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gtsteer"):
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name.startswith("gtsteer")}
    found += [f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in names and node.attr.startswith("_")
              and not node.attr.startswith("__")]
    return found


def test_no_benchmark_or_study_uses_a_private_name_of_gtsteer() -> None:
    files = sorted((ROOT / "lab").rglob("*.py"))
    private = [f"{p.relative_to(ROOT)}: {use}" for p in files
               for use in private_uses(ast.parse(p.read_text(encoding="utf-8")))]
    assert private == []


def test_the_private_scan_sees_both_kinds() -> None:
    source = ("from gtsteer.llm.backends import local\n"
              "from gtsteer.llm.backends.local import _close\n"
              "local._close_engines()\nlocal.close_engines()\n")
    assert private_uses(ast.parse(source)) == ["gtsteer.llm.backends.local._close",
                                               "local._close_engines"]


def test_scripts_keeps_repository_tooling_only() -> None:
    # docs/DESIGN.md: the API reference build and the lock check; benchmarks and studies are
    # the lab's commands.
    assert sorted(p.name for p in (ROOT / "scripts").glob("*.py")) == ["build_reference.py",
                                                                       "check_lock.py"]
