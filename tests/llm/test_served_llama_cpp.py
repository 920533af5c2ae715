"""llama.cpp's C++ `llama-server` as a served backend (issue 25, item 5): `llm ask`, `--choices`
and a structured request through litellm as `openai/smollm2`, with 2 parallel slots.

Slow, and skipped unless the binary was built (`python -m lab llama-tools`, 23
minutes on 2 shared cores): `make test` does not build it. Run under
`flock /tmp/gtsteer-model.lock`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel
from served_support import ask_and_choose

from gtsteer.runs.models import Endpoint
from lab.bench.servers import LlamaCppServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODEL = "openai/smollm2"


def _binary() -> Path:
    from lab.bench import llama_tools

    return llama_tools.tools_dir() / "build" / "bin" / "llama-server"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    binary = _binary()
    if not binary.exists():
        pytest.skip(f"{binary} not built (python -m lab llama-tools)")
    from gtsteer.llm.backends.local import default_model_path

    srv = LlamaCppServer(binary, default_model_path(), tmp_path_factory.mktemp("cpp") / "log",
                         threads=1, slots=2)
    try:
        srv.start()
        yield srv
    finally:
        srv.kill()


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


class Day(BaseModel):
    day: Literal["Monday", "Tuesday"]


def test_ask_choices_and_structured_output(server: LlamaCppServer) -> None:
    ask_and_choose(server.base_url, MODEL)
    llm = Endpoint(server.base_url).llm(MODEL)
    answer = llm.structured_sync("Pick a day to meet: Monday or Tuesday.", Day)
    assert answer.value.day in ("Monday", "Tuesday")
    modes = llm.capabilities()
    assert modes["structured_output"] in ("json_schema", "json_object")
