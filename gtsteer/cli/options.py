"""Command-line options that several commands take, declared once (folded in from
llm_options.py and ray_options.py; the --ray check is `gtsteer.cli.common.ray_options`)."""

from __future__ import annotations

from typing import Annotated

import typer

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

Ray = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Run the units of work (instances, games) as Ray tasks: `local` starts Ray on this"
        " machine (--workers N), `auto` or HOST:PORT joins a cluster (pip install"
        # help is rich markup, where a bare [ray] is a style tag
        " 'gtsteer\\[ray]'; docs/SCALE.md). Results equal the serial run's.",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option("--workers", help="CPUs of the Ray instance `--ray local` starts (default:"
                 " all of this machine's).", min=1),
]
