"""What the served-model tests share: one `gtsteer llm ask` round against a server."""

from __future__ import annotations

import json
from typing import Any


def ask_and_choose(base_url: str, model: str) -> dict[str, Any]:
    """`gtsteer llm ask` against a served model: a short free answer, then `--choices` between
    Paris and Rome for "The capital of France is"; returns the `--json` payload of the choice."""
    from typer.testing import CliRunner

    from gtsteer.cli import app

    runner = CliRunner()
    ask = ["llm", "ask", "--model", model, "--api-base", base_url]
    text = runner.invoke(app, [*ask, "--max-tokens", "8", "--temperature", "0",
                               "Name one day of the week."])
    assert text.exit_code == 0, text.output
    assert text.output.strip()
    picked = runner.invoke(app, [*ask, "--json", "--choices", "Paris,Rome",
                                 "The capital of France is"])
    assert picked.exit_code == 0, picked.output
    payload: dict[str, Any] = json.loads(picked.output)
    assert payload["choice"] == "Paris"
    return payload
