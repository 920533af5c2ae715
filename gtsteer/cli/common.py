"""Shared CLI helpers: one-paragraph errors instead of tracebacks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from rich.console import Console
from rich.markup import escape

from gtsteer.llm.errors import LLMError

console = Console()
err_console = Console(stderr=True)


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    """Turn expected failures (bad model string, missing key, bad config) into a clear message."""
    try:
        yield
    except (LLMError, ValueError, FileNotFoundError) as exc:
        # The message may quote user or model text: never read it as markup.
        err_console.print(f"[bold red]error:[/] {type(exc).__name__}: {escape(str(exc))}",
                          highlight=False)
        raise typer.Exit(code=2) from None
