"""What a run spends (issue 60): `--concurrency` and `--rpm` on every command that calls a
model, one gate serial or on Ray; the final usage line; the budget flags (`--max-calls`,
`--max-tokens`, `--max-cost`) that stop a run cleanly and let a rerun continue.

Against the loopback OpenAI-compatible server, which records arrivals and requests in flight."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm import LLM
from gtsteer.llm.rate import RateLimit, RequestGate
from gtsteer.llm.session import Budget, BudgetExceeded, session
from gtsteer.testing import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"  # 136 requests worst case
runner = CliRunner()


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GTSTEER_RPM", raising=False)


def answer(body: dict[str, Any]) -> str:
    """A valid object for the request's schema, else a short message (as test_llm_serving)."""
    from test_llm_serving import schema_answer

    return schema_answer(body)


def solve(srv: LoopbackServer, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["solve", str(FRUIT), "--llm", "openai/test-model", "--api-base",
                               srv.base_url, "-k", "20", "-q", "--out", str(out), *extra])


# ---- item 3: rate ----------------------------------------------------------------------------


def test_rpm_spaces_a_serial_runs_requests(tmp_path: Path) -> None:
    """`--rpm 60` on a serial run: 5 requests take at least 4 s (one a second), where 16 went
    out at once before."""
    with LoopbackServer(responder=answer) as srv:
        result = solve(srv, tmp_path / "o", "--rpm", "60", "--max-calls", "5")
        arrivals = list(srv.arrivals)
    assert result.exit_code == 3, result.output
    assert len(arrivals) == 5
    assert arrivals[-1] - arrivals[0] >= 4.0 - 0.05
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert min(gaps) >= 1.0 - 0.05  # never two in one second: at or under 60 per minute
    assert "4 rate-limit waits" in " ".join(result.output.split())


def test_concurrency_1_never_has_two_requests_in_flight(tmp_path: Path) -> None:
    with LoopbackServer(0.01, responder=answer) as srv:
        free = solve(srv, tmp_path / "free")
        assert free.exit_code == 0, free.output
        assert srv.max_in_flight > 1  # without the flag, requests overlap
    with LoopbackServer(0.01, responder=answer) as srv:
        one = solve(srv, tmp_path / "one", "--concurrency", "1")
        assert one.exit_code == 0, one.output
        assert srv.max_in_flight == 1 and srv.requests > 50


def test_the_final_line_counts_the_run_and_says_cost_unknown(tmp_path: Path) -> None:
    with LoopbackServer(responder=answer) as srv:
        first = solve(srv, tmp_path / "a")
        sent = srv.requests
        again = solve(srv, tmp_path / "b")
        assert srv.requests == sent  # all cached
    last = first.output.strip().splitlines()[-1]
    assert last.startswith("LLM: ") and f"{sent} new calls" in last
    assert "tokens (" in last and "0 retries" in last and "0 rate-limit waits" in last
    assert last.endswith("cost unknown")  # litellm has no price for openai/test-model
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["llm_cost_usd"] is None
    cached = again.output.strip().splitlines()[-1]
    assert ", 0 new calls, 0 tokens" in cached and cached.endswith("cost $0.0000")


def test_fake_runs_cost_nothing_and_every_model_command_takes_the_rate_flags() -> None:
    from test_llm_serving import _commands

    commands = _commands(typer.main.get_command(app))  # type: ignore[arg-type]
    with_endpoint = {name for name, c in commands.items()
                     if any("--max-wait" in p.opts for p in c.params)}
    assert {"solve", "psro", "export", "imitate", "eval steering", "eval reward"} <= with_endpoint
    # `llm ask` sends one request; `check` sends none (its cost part is a dry run)
    lacking = sorted(name for name in with_endpoint - {"llm ask", "check"}
                     if not {"--concurrency", "--rpm"} <= {o for p in commands[name].params
                                                           for o in p.opts})
    assert lacking == []


def test_one_gate_bounds_several_clients_and_event_loops() -> None:
    """The run's gate is shared by every client built in its session, across the event loops
    the sync wrappers start (a thread each)."""
    with LoopbackServer(0.05) as srv, session(RateLimit(concurrency=2)):
        writer = LLM("openai/a", api_base=srv.base_url, api_key="k")
        reader = LLM("openai/b", api_base=srv.base_url, api_key="k")

        async def burst(llm: LLM, tag: str) -> None:
            await asyncio.gather(*(llm.generate(f"{tag} {i}", seed=i) for i in range(6)))

        async def both() -> None:
            await asyncio.gather(burst(writer, "w"), burst(reader, "r"),
                                 asyncio.to_thread(reader.generate_sync, "thread", seed=99))

        asyncio.run(both())
        assert srv.requests == 13 and srv.max_in_flight == 2


def test_the_gate_wakes_a_waiter_when_a_slot_frees_and_spaces_starts() -> None:
    async def scenario() -> tuple[float, float]:
        gate = RequestGate(RateLimit(concurrency=1))
        token, _ = await gate.acquire()
        waiting = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0.1)
        assert not waiting.done()
        start = time.monotonic()
        gate.release(token)
        second, _ = await waiting
        woke = time.monotonic() - start
        spaced = RequestGate(RateLimit(rpm=600))  # one every 0.1 s
        t0 = time.monotonic()
        for _ in range(4):
            async with spaced.slot():
                pass
        gate.release(second)
        return woke, time.monotonic() - t0

    woke, four = asyncio.run(scenario())
    assert woke < 0.05
    assert 0.3 - 0.02 <= four < 0.6


def test_bad_rate_values_are_one_line_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GTSTEER_RPM", "fast")
    result = runner.invoke(app, ["solve", str(FRUIT), "--llm", "fake", "-q"])
    assert result.exit_code == 2 and "GTSTEER_RPM='fast'" in result.output
    result = runner.invoke(app, ["solve", str(FRUIT), "--llm", "fake", "--rpm", "0"])
    assert result.exit_code == 2 and "--rpm" in result.output


def test_gtsteer_rpm_now_bounds_a_serial_run(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("GTSTEER_RPM", "120")
    with LoopbackServer(responder=answer) as srv:
        result = solve(srv, tmp_path / "o", "--max-calls", "3")
        arrivals = list(srv.arrivals)
    assert result.exit_code == 3, result.output
    assert len(arrivals) == 3 and arrivals[-1] - arrivals[0] >= 1.0 - 0.05


# ---- item 2: budget ---------------------------------------------------------------------------


def test_a_session_budget_stops_before_the_call_past_it() -> None:
    with session(budget=Budget(max_calls=2)):
        llm = LLM("fake")
        llm.generate_sync("one", seed=1)
        llm.generate_sync("two", seed=1)
        llm.generate_sync("one", seed=1)  # a cache hit is free
        with pytest.raises(BudgetExceeded, match="--max-calls 2 reached"):
            llm.generate_sync("three", seed=1)
    assert llm.usage.new_calls == 2 and llm.usage.failures == 0


def _numbers(folder: Path) -> dict[str, Any]:
    from gtsteer.runs.solve_schema import SolveSummary

    text = (folder / "summary.json").read_text()
    return SolveSummary.model_validate_json(text).numbers()


def test_a_run_stopped_by_max_tokens_continues_to_the_unlimited_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(responder=answer) as srv:
        monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache-unlimited"))
        full = solve(srv, tmp_path / "full")
        assert full.exit_code == 0, full.output
        spent = json.loads((tmp_path / "full" / "summary.json").read_text())["llm_calls"]
        tokens = int(full.output.split(" tokens (")[0].rsplit(", ", 1)[1].replace(",", ""))
        assert tokens > 0 and srv.requests == spent["new_calls"]

        monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache-limited"))
        srv.reset_counters()
        stopped = solve(srv, tmp_path / "limited", "--max-tokens", str(tokens // 3))
        assert stopped.exit_code == 3, stopped.output
        said = " ".join(stopped.output.split())
        assert f"stopped: --max-tokens {tokens // 3:,} reached" in said
        assert f"raise --max-tokens and rerun with the same --out {tmp_path / 'limited'}" in said
        assert not (tmp_path / "limited" / "summary.json").exists()
        first_part = srv.requests
        assert 0 < first_part < spent["new_calls"]

        srv.reset_counters()
        rest = solve(srv, tmp_path / "limited", "--max-tokens", str(tokens * 10))
        assert rest.exit_code == 0, rest.output
        # only what the stopped run had not asked (an answer in flight at the stop counts once)
        assert srv.requests <= spent["new_calls"] - first_part + 16
    assert _numbers(tmp_path / "limited") == _numbers(tmp_path / "full")


def test_max_cost_refuses_a_model_litellm_cannot_price_before_the_first_call(
        tmp_path: Path) -> None:
    """An unpriced model cannot be held to a cost: one line naming it, exit 2, nothing sent;
    a priced model at the same server runs under the same flag."""
    with LoopbackServer(responder=answer) as srv:
        result = solve(srv, tmp_path / "o", "--max-cost", "0.01")
        assert result.exit_code == 2, result.output
        assert srv.requests == 0
        said = " ".join(result.output.split())
        assert ("--max-cost: litellm has no price for openai/test-model, so its cost cannot be"
                " bounded; bound the run with --max-tokens or --max-calls instead") in said
        assert not (tmp_path / "o").exists()
        priced = runner.invoke(app, ["solve", str(FRUIT), "--llm", "openai/gpt-4o-mini",
                                     "--api-base", srv.base_url, "-k", "20", "-q", "--out",
                                     str(tmp_path / "p"), "--max-cost", "5"])
        assert priced.exit_code == 0, priced.output
        last = priced.output.strip().splitlines()[-1]
        assert srv.requests > 0 and ", cost $0.0" in last  # priced: dollars, not "cost unknown"
