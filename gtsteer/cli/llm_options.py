"""The served-model flags every command with `--llm` takes: `--api-base` and `--api-key-env`.

One definition, so each command spells, documents and checks them the same way, and one
factory (`Endpoint.llm`) that every model of a run is built through.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated

import typer

from gtsteer.llm import LLM, ModelConfigError

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


def _served(model: str) -> bool:
    return not (model in ("local", "fake") or model.startswith(("local:", "fake:")))


@dataclass(frozen=True)
class Endpoint:
    """Where served (litellm) models of one command live; in-process models ignore it."""

    api_base: str | None = None
    api_key_env: str | None = None

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ModelConfigError(
                f"--api-key-env {self.api_key_env}: that environment variable is not set."
            )
        return key

    def resolve(self, model: str) -> str | LLM:
        """What a driver takes as its model: the string itself unless the flags concern it
        (drivers build the client then, after checking their config)."""
        given = self.api_base or self.api_key_env
        return self.llm(model) if given and _served(model) else model

    def llm(self, model: str) -> LLM:
        """The client of `model`: served models get the base URL and key."""
        if not _served(model):
            return LLM(model)
        key = self.api_key()
        if key is None and self.api_base and not os.environ.get("OPENAI_API_KEY"):
            # An OpenAI-compatible server without auth (llama.cpp, vLLM) still needs the
            # SDK to hold some key; this placeholder is what those servers' docs send.
            key = "no-key" if model.startswith("openai/") else None
        return LLM(model, api_base=self.api_base, api_key=key)

    def check(self, *models: str | None) -> None:
        """Flags given for a run without a served model are a mistake worth one line."""
        if (self.api_base or self.api_key_env) and not any(m and _served(m) for m in models):
            raise ModelConfigError(
                "--api-base/--api-key-env apply to served models (litellm ids such as"
                f" openai/NAME or hosted_vllm/NAME); this run uses only {', '.join(m for m in models if m)}."
            )
