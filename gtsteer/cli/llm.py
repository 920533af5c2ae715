"""`gtsteer llm ask|info`."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from gtsteer.cli.common import console, friendly_errors, grouped
from gtsteer.cli.options import MODELS, AnswerTokens, SamplingSeed, Served
from gtsteer.llm import ResponseCache, default_cache_dir
from gtsteer.llm.backends import BACKEND_KINDS
from gtsteer.llm.backends.local import (
    CACHE_MB_ENV,
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    THREADS_ENV,
    cache_bytes_from_env,
    local_threads,
)

llm_app = typer.Typer(help="Talk to a language model through gtsteer's cached LLM layer.")


@llm_app.command()
@grouped
def ask(
    prompt: Annotated[str, typer.Argument(help="Completion-style prompt.")],
    model: Annotated[
        str, typer.Option("--model", "-m", help=MODELS)
    ] = "local",
    seed: SamplingSeed = 0,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature.")
    ] = 0.7,
    max_tokens: AnswerTokens = 64,
    choices: Annotated[
        str | None,
        typer.Option("--choices", help='Comma-separated options, e.g. "A,B,C": pick one.'),
    ] = None,
    served: Served = Served(),
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
) -> None:
    """Print a completion, or with --choices the chosen option and per-option scores."""
    with friendly_errors():
        endpoint = served.endpoint()
        endpoint.check(model)
        llm = endpoint.llm(model)
        if choices:
            options = [c.strip() for c in choices.split(",") if c.strip()]
            result = llm.choose_sync(prompt, options, seed=seed)
            if as_json:
                payload = {**result.model_dump(), "usage": llm.usage.model_dump()}
                console.print_json(json.dumps(payload))
                return
            table = Table("option", "score", title=f"choice ({result.method})")
            for option, score in sorted(result.scores.items(), key=lambda kv: -kv[1]):
                mark = " ←" if option == result.choice else ""
                table.add_row(option + mark, f"{score:.4f}")
            console.print(result.choice)
            console.print(table)
            return
        completion = llm.generate_sync(
            prompt, seed=seed, temperature=temperature, max_tokens=max_tokens
        )
        if as_json:
            payload = {
                "text": completion.text,
                "cached": completion.cached,
                "usage": completion.usage.model_dump(),
            }
            typer.echo(json.dumps(payload))
        else:
            typer.echo(completion.text)


@llm_app.command()
def info() -> None:
    """Show backends, the cache location, its entries and size."""
    with friendly_errors():
        cache = ResponseCache()
        entries, size = len(cache), cache.volume_bytes()
    table = Table("what", "value")
    local, *others = BACKEND_KINDS  # every embedded model after `local`
    table.add_row("backends", ", ".join([local, *(f"local:{n}" for n in EMBEDDED_MODELS),
                                         *others]))
    table.add_row("default model", f"local = local:{DEFAULT_LOCAL_MODEL} (llama.cpp)")
    table.add_row("local threads", f"{local_threads()} ({THREADS_ENV})")
    table.add_row("local prefix cache", f"{cache_bytes_from_env() / 2**20:.0f} MB ({CACHE_MB_ENV})")
    table.add_row("cache dir", str(default_cache_dir()))
    table.add_row("cache entries", str(entries))
    table.add_row("cache size", f"{size / 1e6:.2f} MB")
    console.print(table)
