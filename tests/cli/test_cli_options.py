"""Every flag that two or more commands take is declared once, in `gtsteer/cli/options.py`.

The app is walked as click sees it (every command and subcommand), so a command that
redeclares `--seed` by hand with its own help, type or bounds fails here, and so does a module
other than options.py that spells a shared flag in a `typer.Option(...)` of its own.
"""

from __future__ import annotations

import ast
import typing
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.models import OptionInfo
from typer.testing import CliRunner

from gtsteer.cli import app, options

CLI = Path(options.__file__).parent
FRUIT = str(Path(__file__).resolve().parents[2] / "gtsteer" / "configs" / "trade_fruit_tone.yaml")


def commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(`gtsteer a b`, command) for the app and every command and subcommand below it."""
    yield " ".join(("gtsteer", *path)), command
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        yield from commands(sub, (*path, name))


def long_name(param: Any) -> str | None:
    return next((o for o in param.opts if o.startswith("--")), None)


def signature(param: Any) -> tuple:
    """What a user sees of an option: its spellings, help, value type and bounds."""
    described = getattr(param, "type_descriptor", None)  # typer >= 0.2x (its own click)
    kind = repr(described.annotation) if described is not None else repr(param.type)
    return (tuple(param.opts), tuple(param.secondary_opts), param.help, kind,
            getattr(param, "min", None), getattr(param, "max", None), param.multiple)


def option_params() -> dict[str, list[tuple[str, Any]]]:
    """Long flag -> (command, param) for every option of every command (--help aside)."""
    found: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for where, command in commands(typer.main.get_command(app)):
        for param in command.params:
            flag = long_name(param)
            if flag is not None and flag != "--help" and param.param_type_name == "option":
                found[flag].append((where, param))
    return found


def declared(alias: Any) -> Any:
    """The click param typer builds from one alias of options.py."""

    def command(value: Any = None) -> None: ...

    command.__annotations__ = {"value": alias, "return": None}
    one = typer.Typer()
    one.command()(command)
    return next(p for p in typer.main.get_command(one).params if p.name == "value")


def aliases() -> dict[str, dict[str, Any]]:
    """Long flag -> {alias name: its click param} for every option alias in options.py."""
    found: dict[str, dict[str, Any]] = defaultdict(dict)
    for name, value in vars(options).items():
        if typing.get_origin(value) is typing.Annotated and any(
                isinstance(m, OptionInfo) for m in value.__metadata__):
            param = declared(value)
            found[long_name(param)][name] = param
    return found


def shared_flags() -> set[str]:
    """Flags that two or more commands take, and every flag options.py declares."""
    taken = {flag for flag, uses in option_params().items()
             if len({where for where, _ in uses}) > 1}
    return taken | set(aliases())


def test_every_shared_flag_is_one_of_its_declarations() -> None:
    declarations = aliases()
    problems = []
    for flag, uses in sorted(option_params().items()):
        if len({where for where, _ in uses}) > 1 and flag not in declarations:
            problems.append(f"{flag} ({', '.join(w for w, _ in uses)}): declare it once in"
                            " gtsteer/cli/options.py")
            continue
        known = {signature(p): name for name, p in declarations.get(flag, {}).items()}
        for where, param in uses:
            if flag in declarations and signature(param) not in known:
                problems.append(f"{where} {flag}: help/type {signature(param)} is none of"
                                f" options.{', options.'.join(declarations[flag])}")
    assert not problems, "\n".join(problems)


def test_a_flag_with_one_declaration_reads_the_same_in_every_command() -> None:
    """`--quiet`, `--ray`, `--api-base`, ...: one help text and one type across commands."""
    declarations = aliases()
    for flag, uses in option_params().items():
        if len(declarations.get(flag, {})) == 1:
            seen = {signature(p) for _, p in uses}
            assert len(seen) == 1, (flag, seen)


def test_declarations_of_one_flag_differ_and_each_is_used() -> None:
    """Two aliases of one flag must differ in what a user sees (or in the Python type, as
    `Players` and `TablePlayers` might), and every declaration is taken by some command."""
    used = {signature(p) for uses in option_params().values() for _, p in uses}
    for flag, named in aliases().items():
        kinds = {name: (signature(p), typing.get_args(getattr(options, name))[0])
                 for name, p in named.items()}
        assert len(set(kinds.values())) == len(kinds), (flag, kinds)
        for name, param in named.items():
            assert signature(param) in used, f"options.{name} ({flag}) is used by no command"


def typer_calls(tree: ast.AST, attr: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == attr
                 and isinstance(node.func.value, ast.Name) and node.func.value.id == "typer")
                or (isinstance(node.func, ast.Name) and node.func.id == attr)):
            yield node


def declared_flags(call: ast.Call, param_name: str | None) -> set[str]:
    """The flags one `typer.Option(...)` declares; none spelt: the parameter's own name."""
    spelt = {flag for arg in call.args
             if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
             and arg.value.startswith("-") for flag in arg.value.split("/")}
    if not spelt and param_name is not None:
        spelt = {"--" + param_name.replace("_", "-")}
    return {f for f in spelt if f.startswith("--")}


def hand_declared(source: str) -> list[tuple[int, str]]:
    """(line, flag) of every `typer.Option` in a module, parameters' implicit names included."""
    tree = ast.parse(source)
    owner: dict[ast.Call, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
            defaults = ([None] * (len(fn.args.posonlyargs) + len(fn.args.args)
                                  - len(fn.args.defaults)) + list(fn.args.defaults)
                        + list(fn.args.kw_defaults))
            for arg, default in zip(args, defaults, strict=True):
                for part in (arg.annotation, default):
                    if part is not None:
                        owner.update((c, arg.arg) for c in typer_calls(part, "Option"))
    return [(call.lineno, flag) for call in typer_calls(tree, "Option")
            for flag in declared_flags(call, owner.get(call))]


def test_only_options_py_declares_a_shared_flag() -> None:
    shared = shared_flags()
    by_hand = [f"{path.name}:{line} declares {flag} (use its alias in options.py)"
               for path in sorted(CLI.glob("*.py")) if path.name != "options.py"
               for line, flag in hand_declared(path.read_text()) if flag in shared]
    assert not by_hand, "\n".join(by_hand)


def test_the_source_check_sees_implicit_and_explicit_flags() -> None:
    """The check above finds a flag however a module spells it (it must be able to fail)."""
    source = '''
def ask(seed: int = typer.Option(0, help="x"),
        out: Annotated[str, typer.Option("--out", "-o")] = "",
        quiet: Annotated[bool, Option("--quiet/--loud")] = False) -> None: ...
'''
    assert {flag for _, flag in hand_declared(source)} == {"--seed", "--out", "--quiet",
                                                           "--loud"}


def test_every_command_uses_the_annotated_style() -> None:
    """No `param: T = typer.Option(...)`: one typer style throughout the CLI."""
    old_style = []
    for path in sorted(CLI.glob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for default in [*fn.args.defaults, *fn.args.kw_defaults]:
                    if default is not None and any(
                            True for attr in ("Option", "Argument")
                            for _ in typer_calls(default, attr)):
                        old_style.append(f"{path.name}:{default.lineno} ({fn.name})")
    assert not old_style, old_style


def test_solve_games_given_as_one_still_conflicts_with_instances(tmp_path: Path) -> None:
    """`solve --games` defaults to 1; giving it, even as 1, beside --instances is refused."""
    runner = CliRunner()
    missing = str(tmp_path / "none.jsonl")
    for games in ("1", "2"):
        result = runner.invoke(app, ["solve", FRUIT, "--llm", "fake", "--games", games,
                                     "--instances", missing, "-o", str(tmp_path / "o")])
        assert result.exit_code == 2 and "not both" in result.output, result.output
    result = runner.invoke(app, ["solve", FRUIT, "--llm", "fake", "--instances", missing,
                                 "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "not both" not in result.output, result.output
