"""Shared CLI helpers: one-paragraph errors instead of tracebacks, and the check of `--ray`
and `--workers` (declared, as every shared option, in `gtsteer.cli.options`)."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape

from gtsteer.binding import ExpansionError
from gtsteer.llm.cache import CacheReadOnlyWarning, StorageError
from gtsteer.llm.errors import LLMError
from gtsteer.llm.secrets import scrub_secrets
from gtsteer.runs.models import Endpoint
from gtsteer.runs.units import RayClusterError, RayOptions

console = Console()
err_console = Console(stderr=True)
Options = TypeVar("Options", bound=BaseModel)
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


def parse_options(model: type[Options], flags: dict[str, str], **values: Any) -> Options:
    """`model(**values)`, its validation errors as one ValueError naming the command's flags."""
    try:
        return model(**values)
    except ValidationError as exc:
        raise ValueError(_problems(exc, flags)) from None


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


def ray_options(address: str | None, workers: int | None) -> RayOptions | None:
    """The run's Ray settings from `--ray`/`--workers`; None (serial, Ray not imported)
    without --ray (docs/SCALE.md)."""
    if address is None:
        if workers is not None:
            raise typer.BadParameter("only with --ray local", param_hint="--workers")
        return None
    try:
        options = RayOptions(address.strip(), workers)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--ray") from None
    try:
        import ray  # noqa: F401 - the extra is optional: say how to get it, in one line
    except ImportError:
        raise typer.BadParameter("Ray is not installed: pip install 'gtsteer[ray]'",
                                 param_hint="--ray") from None
    return options


def endpoint_of(api_base: str | None, api_key_env: str | None, request_timeout: float | None,
             max_wait: float | None) -> Endpoint:
    """Where the run's served models live, from `--api-base`, `--api-key-env`,
    `--request-timeout` and `--max-wait` (an unusable variable name is refused here)."""
    return Endpoint(api_base, api_key_env, timeout_s=request_timeout, max_wait_s=max_wait)


def note(line: str) -> None:
    """A run's one-line notes (the tree-size estimate, a resumed run), on stderr
    (`RunContext.report`); none with `-q`."""
    if not console.quiet:
        err_console.print(line, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def quieted(on: bool) -> Iterator[None]:
    """`-q`: the block prints nothing on stdout but its `final` lines, and no notes (errors,
    warnings and the usage line stay on stderr)."""
    before, console.quiet = console.quiet, on or console.quiet
    try:
        yield
    finally:
        console.quiet = before


def final(line: str) -> None:
    """A command's last line, where its results are: printed even with `-q`."""
    before, console.quiet = console.quiet, False
    try:
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    finally:
        console.quiet = before
