"""Shared CLI helpers: one-paragraph errors instead of tracebacks, and the signature typer reads
of a command that a decorator gives more flags (`grouped`, `spending`, `overridable`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, get_args, get_type_hints

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape

from gtsteer.binding import ExpansionError
from gtsteer.llm.cache import CacheReadOnlyWarning, StorageError
from gtsteer.llm.errors import LLMError
from gtsteer.llm.secrets import scrub_secrets
from gtsteer.runs.units import RayClusterError
from gtsteer.solvers.metrics import MeanCI

console = Console()
err_console = Console(stderr=True)
Options = TypeVar("Options", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])
_show_warning = warnings.showwarning


def _one_line_warnings(message: Warning | str, category: type[Warning], filename: str,
                       lineno: int, file: Any = None, line: str | None = None) -> None:
    """Warnings meant for the user (a read-only cache) as one line, not Python's source echo."""
    if issubclass(category, CacheReadOnlyWarning):
        err_console.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False,
                          soft_wrap=True)
    else:
        _show_warning(message, category, filename, lineno, file, line)


warnings.showwarning = _one_line_warnings


def _problems(exc: ValidationError, flags: dict[str, str] | None = None) -> str:
    """Each error as `name: problem`, the field shown as its flag where `flags` names one."""
    out = []
    for e in exc.errors():
        field = ".".join(str(p) for p in e["loc"])
        top = str(e["loc"][0]) if e["loc"] else ""
        name = (flags or {}).get(top, field or "(top level)")
        value = e.get("input")
        msg = (f"must be a number, got {value}" if isinstance(value, float) and math.isnan(value)
               else f"{e['msg']} (got {value!r})" if e["type"] == "literal_error"
               else e["msg"])
        out.append(f"{name}: {msg}")
    return "; ".join(out)


def parse_options(model: type[Options], renamed: dict[str, str] | None = None,
                  **values: Any) -> Options:
    """`model(**values)`, its validation errors as one ValueError naming the command's flags:
    `--a-b` for a value `a_b`, unless `renamed` spells its flag otherwise."""
    try:
        return model(**values)
    except ValidationError as exc:
        flags = {name: "--" + name.replace("_", "-") for name in values}
        raise ValueError(_problems(exc, flags | (renamed or {}))) from None


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    """Turn expected failures (bad model string, missing key, bad config, unusable storage, a
    model that answered nothing a run needs, a Ray cluster that cannot be joined) into one
    clear line and exit 2."""
    try:
        yield
    except ValidationError as exc:  # one line naming the fields, not pydantic's dump
        err_console.print(f"[bold red]error:[/] invalid {escape(exc.title)}: "
                          f"{escape(_problems(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=2) from None
    except (LLMError, StorageError, RayClusterError, ExpansionError, ValueError,
            FileNotFoundError) as exc:
        # escaped: a path or a message may hold [brackets] that Rich would read as markup
        shown = escape(scrub_secrets(str(exc)))  # a key a server quoted never reaches stderr
        err_console.print(f"[bold red]error:[/] {type(exc).__name__}: {shown}",
                          highlight=False, soft_wrap=True)  # one line, never wrapped
        raise typer.Exit(code=2) from None


def retyped(run: Any, signature: inspect.Signature, params: Iterable[inspect.Parameter],
            added: dict[str, Any] | None = None) -> Any:
    """`run`, a wrapper of a command, with `params` and then the keyword flags `added` (name:
    annotation; a bool flag off by default, any other unset) for its parameters: typer reads
    this signature and these annotations, not the wrapped command's."""
    params = [*params, *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                           default=False if get_args(kind)[0] is bool else None)
                         for name, kind in (added or {}).items())]
    run.__signature__ = signature.replace(parameters=params)
    run.__annotations__ = {p.name: p.annotation for p in params}
    del run.__wrapped__
    return run


def grouped(command: F) -> F:
    """`command` with each parameter that is a group of flags (a dataclass of options, such as
    `options.Served`) given as those flags, in its place; it gets the group built from them."""
    signature = inspect.signature(command, eval_str=True)
    groups: dict[str, Any] = {p.name: p.annotation for p in signature.parameters.values()
                              if dataclasses.is_dataclass(p.annotation)}
    if not groups:
        return command
    params = []
    for p in signature.parameters.values():
        if p.name not in groups:
            params.append(p)
            continue
        hints = get_type_hints(groups[p.name], include_extras=True)
        params += [p.replace(name=f.name, default=f.default, annotation=hints[f.name])
                   for f in dataclasses.fields(groups[p.name])]

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        for name, group in groups.items():
            kwargs[name] = group(**{f.name: kwargs.pop(f.name, f.default)
                                    for f in dataclasses.fields(group)})
        return command(*args, **kwargs)

    return retyped(run, signature, params)


def signed(x: float | None, digits: int = 4) -> str:
    """Signed fixed-point text, "—" for none; rounds first so a tiny negative float never
    prints as -0.0000."""
    return "—" if x is None else f"{round(x, digits) + 0.0:+.{digits}f}"


def interval(m: MeanCI, digits: int = 4) -> str:
    """A 95% interval as `[low, high]`, or why there is none."""
    if m.ci_low is None or m.ci_high is None:
        return "— (1 instance)"
    return f"[{signed(m.ci_low, digits)}, {signed(m.ci_high, digits)}]"


def note(line: str) -> None:
    """A run's one-line notes (the tree-size estimate, a resumed run), on stderr
    (`RunContext.report`); none with `-q`."""
    if not console.quiet:
        err_console.print(line, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def quieted(on: bool, *, force: bool = False) -> Iterator[None]:
    """`-q`: the block prints nothing on stdout but its `final` lines, and no notes (errors,
    warnings and the usage line stay on stderr); `force`: `on` even inside a quiet block."""
    before, console.quiet = console.quiet, on if force else on or console.quiet
    try:
        yield
    finally:
        console.quiet = before


def final(line: str) -> None:
    """A command's last line, where its results are: printed even with `-q`."""
    with quieted(False, force=True):
        console.print(line, highlight=False, soft_wrap=True, markup=False)
