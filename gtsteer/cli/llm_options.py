"""The served-model flags every command with `--llm` takes: `--api-base` and `--api-key-env`.

One definition, so each command spells, documents and checks them the same way, and one
factory (`Endpoint.llm`, in `gtsteer.runs.models` since the drivers also build a config's
`models:` roles through it) that every model of a run is built through.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gtsteer.runs.models import Endpoint

__all__ = ["ApiBase", "ApiKeyEnv", "Endpoint"]

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
