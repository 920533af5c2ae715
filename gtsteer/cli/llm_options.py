"""The served-model flags every command with `--llm` takes: `--api-base` and `--api-key-env`.

One definition, so each command spells, documents and checks them the same way, and one
factory (`Endpoint.llm`, in `gtsteer.runs.models` since the drivers also build a config's
`models:` roles through it) that every model of a run is built through.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gtsteer.runs.models import Endpoint

__all__ = ["ApiBase", "ApiKeyEnv", "Endpoint", "MaxWait", "RequestTimeout"]

ApiBase = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        help="Base URL of an OpenAI-compatible server for litellm models, e.g."
        " http://127.0.0.1:8080/v1 (llama.cpp server, vLLM; see docs/SERVING.md).",
    ),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Name of the environment variable that holds the server's API key (the key"
        " itself never goes on the command line or into the cache).",
    ),
]
RequestTimeout = Annotated[
    float | None,
    typer.Option(
        "--request-timeout",
        help="Seconds one request to a served model may take before it is retried (default"
        " 120; docs/SERVING.md).",
        min=0.001,
    ),
]
MaxWait = Annotated[
    float | None,
    typer.Option(
        "--max-wait",
        help="The longest wait in seconds between two tries of a served model's request, a"
        " server's Retry-After included (default 300; the wait is shown in the progress bar).",
        min=0.0,
    ),
]
