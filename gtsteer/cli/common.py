"""Shared CLI helpers: one-paragraph errors instead of tracebacks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from rich.console import Console

from gtsteer.llm.errors import LLMError

console = Console()
err_console = Console(stderr=True)


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    """Turn expected failures (bad model string, missing key, bad config) into a clear message."""
    try:
        yield
    except (LLMError, ValueError, FileNotFoundError) as exc:
        err_console.print(f"[bold red]error:[/] {type(exc).__name__}: {exc}", highlight=False)
        raise typer.Exit(code=2) from None
