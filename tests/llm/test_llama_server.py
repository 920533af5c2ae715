"""The main job against a real llama.cpp server, through litellm, as a user runs it.

The tests start llama-cpp-python's OpenAI-compatible server on loopback with the embedded
SmolLM2 GGUF (`python -m llama_cpp.server ... --model_alias smollm2 --n_threads 1`) and drive
the CLI with `--llm openai/smollm2 --api-base URL`. The server refuses `json_schema`
(structured output goes as `json_object` with the schema after one refused request) and returns
chat `top_logprobs` (so `choose` is scored). Slow: they load a model (run them under
`flock /tmp/gtsteer-model.lock`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from served_support import ask_and_choose
from solve_helpers import small_meeting
from typer.testing import CliRunner

import gtsteer.llm.client as client_module
from gtsteer.cli import app
from gtsteer.llm import ResponseCache
from gtsteer.llm.backends.base import Backend
from gtsteer.llm.cache import cache_key
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage
from gtsteer.runs.models import Endpoint
from lab.bench.servers import LlamaServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
MODEL = "openai/smollm2"
runner = CliRunner()
#: Restarts a test allows when llama-cpp-python's server itself dies or hangs mid-run. Seen in
#: CI twice in full-suite runs (never when this file runs alone): its log stops inside a prompt
#: evaluation, no traceback (upstream reports the server freezing under concurrent requests,
#: abetlen/llama-cpp-python#1995). gtsteer fails such a run with a clear error and a restarted
#: server's rerun resumes from the cache, which is what a user does and what these tests check.
SERVER_RESTARTS = 2


def invoke_resuming(server: LlamaServer, args: list[str]) -> Any:
    """Run the CLI; when the run failed because the server died or hung, restart it and rerun."""
    result = runner.invoke(app, args)
    for _ in range(SERVER_RESTARTS):
        if result.exit_code == 0 or server.answers():
            break
        what = server.restart()
        print(f"llama.cpp server {what}; restarted, rerunning: {result.output[-300:]}")
        result = runner.invoke(app, args)
    return result


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's server extras")
    from gtsteer.llm.backends.local import default_model_path

    srv = LlamaServer(default_model_path(), tmp_path_factory.mktemp("llama-server") / "log")
    try:
        srv.start()
        yield srv
    finally:
        srv.kill()  # also when a test (or the start) failed


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_llm_ask_and_choices(server: LlamaServer) -> None:
    payload = ask_and_choose(server.base_url, MODEL)
    # Scored from the server's top_logprobs, not a constrained guess.
    assert payload["method"] == "loglik"
    assert payload["scores"]["Paris"] > payload["scores"]["Rome"]
    assert payload["usage"]["new_calls"] == 1


class Answered(Backend):
    """Wraps a backend and records every request the server answered (by its identity)."""

    log: ClassVar[list[str]] = []

    def __init__(self, inner: Backend):
        super().__init__(inner.model)
        self.inner = inner
        self.kind = inner.kind
        self.max_concurrency = inner.max_concurrency
        self.supports_grammar = inner.supports_grammar

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def capabilities(self) -> dict[str, str | None]:
        return self.inner.capabilities()

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        raw = await self.inner.complete(request, json_schema)
        self.log.append(cache_key({"r": request.model_dump(), "s": json_schema}))
        return raw

    async def score_options_with_usage(
        self, request: GenerationRequest, options: list[str]
    ) -> tuple[dict[str, float] | None, Usage]:
        scores, usage = await self.inner.score_options_with_usage(request, options)
        self.log.append(cache_key({"r": request.model_dump(), "o": options}))
        return scores, usage


def test_solve_killed_mid_run_resumes_from_the_cache(
    server: LlamaServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The README job's domain (four days, one sample: about 45 requests, a fraction of the
    README instance): the server dies mid-run; after a restart the rerun solves the instance,
    and no request the dead server had answered is sent again."""
    config = small_meeting(tmp_path, days=("Monday", "Tuesday", "Friday", "any"))
    real = client_module.make_backend
    monkeypatch.setattr(client_module, "make_backend",
                        lambda *a, **k: Answered(real(*a, **k)))
    import gtsteer

    first_out, out = tmp_path / "killed", tmp_path / "run"
    llm = Endpoint(server.base_url).llm(MODEL)
    llm.max_retries = 1  # the dead server fails the run quickly
    killed = threading.Thread(target=gtsteer.solve, args=(config,),
                              kwargs={"llm": llm, "out": first_out, "quiet": True})
    killed.start()
    cache = ResponseCache()
    while len(cache) < 25 and killed.is_alive():
        time.sleep(0.5)  # polling the shared cache until the run is under way
    server.kill()
    killed.join(timeout=600)
    assert not killed.is_alive()
    first = json.loads((first_out / "summary.json").read_text())
    assert first["num_failed"] == 1  # the run really was cut short
    before_restart = list(Answered.log)
    assert len(before_restart) >= 25

    server.start()
    result = invoke_resuming(server, ["solve", str(config), "--llm", MODEL, "--api-base",
                                      server.base_url, "--games", "1", "-q", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["num_solved"], summary["num_failed"]) == (1, 0)
    assert summary["llm_modes"] == {"structured_output": "json_object", "choice": "loglik"}
    rerun = Answered.log[len(before_restart):]
    assert rerun, "the rerun had calls left to make"
    assert set(rerun).isdisjoint(before_restart)
    assert summary["llm_calls"]["cache_hits"] >= len(set(before_restart))


def test_eval_steering_with_two_samples(server: LlamaServer, tmp_path: Path) -> None:
    if not server.answers():
        server.restart()
    out = tmp_path / "steering"
    result = invoke_resuming(server, ["eval", "steering", str(CONFIG), "--llm", MODEL,
                                      "--api-base", server.base_url, "--samples", "2", "-q",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "steering.json").read_text())
    assert report["model"] == MODEL
    assert report["llm_modes"]["choice"] == "loglik"
    plain = next(r for r in report["runs"] if r["variant"] == "plain")
    assert plain["aggregate"]["n"] == 2 * 7  # 2 messages per weekday instruction, all classified
    assert os.path.exists(out / "confusion-plain-day.png")
