"""`--dry-run` (issue 60, item 1): every command that calls a model says what a run would send
(requests, how many the cache answers, prompt and completion tokens, cost) and sends nothing.

Against the loopback OpenAI-compatible server, which counts requests and tokens."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.llm.schema_fill import WORDS
from gtsteer.testing import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GTSTEER_RPM", raising=False)
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "cache"))


def answer(body: dict[str, Any]) -> str:
    """A valid object for a structured request; else a message of 8 to 20 words that differs
    by request, as a sampled model's does (test_llm_serving's names only a day: 7 messages in
    all, so that the real tree's branches coincide far more than a model's would)."""
    from test_llm_serving import schema_answer

    text = schema_answer(body)
    if text.startswith("{"):
        return text
    rng = random.Random(hashlib.sha256(json.dumps(body["messages"]).encode()
                                       + str(body.get("seed")).encode()).digest())
    return text + " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 15)))


def solve(srv: LoopbackServer, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["solve", str(FRUIT), "--llm", "openai/test-model", "--api-base",
                               srv.base_url, "-k", "20", "-q", "--out", str(out), *extra])


def numbers(output: str, label: str) -> list[int]:
    line = next(ln for ln in output.splitlines() if ln.startswith(label))
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", line)]


def tiktoken_count(text: str) -> int:
    """The server's token count: tiktoken's, as OpenAI's models count (litellm's tokenizer)."""
    import litellm

    return int(litellm.token_counter(model="gpt-4o", text=text))


def test_dry_run_sends_nothing_and_bounds_the_real_run(tmp_path: Path) -> None:
    """Cold cache: the count bounds the real run's new calls (the stand-ins keep every
    dialogue going; the real answers, often alike, share subtrees), and the bound on tokens
    holds. Nothing is sent or written."""
    with LoopbackServer(responder=answer, count_tokens=tiktoken_count) as srv:
        dry = solve(srv, tmp_path / "dry", "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert srv.requests == 0  # nothing sent
        assert not (tmp_path / "dry").exists()  # nothing written
        total, cached, would = numbers(dry.output, "requests:")
        assert cached == 0 and would == total == 136
        prompt, completion, bound_prompt, bound_completion = numbers(dry.output, "tokens:")
        assert "cost: about unknown" in dry.output  # litellm has no price for test-model

        real = solve(srv, tmp_path / "real")
        assert real.exit_code == 0, real.output
        sent = srv.requests
        srv.reset_counters()
        again = solve(srv, tmp_path / "again", "--dry-run")  # everything is cached now
        assert again.exit_code == 0 and srv.requests == 0
    assert sent <= would <= 2 * sent
    assert bound_prompt + bound_completion >= server_tokens(real.output)
    assert numbers(again.output, "requests:") == [total, total, 0]


def server_tokens(output: str) -> int:
    """The tokens of the final usage line: the server's counts (its `usage`)."""
    return int(re.search(r"([\d,]+) tokens \(", output)[1].replace(",", ""))


def test_a_partly_cached_run_estimates_the_rest_within_a_factor_2(tmp_path: Path) -> None:
    """After 30 real calls the cache has answers to measure: the dry run's token estimate for
    the rest is within a factor 2 of what the server then counts, its request count between
    the new calls and twice them."""
    with LoopbackServer(responder=answer, count_tokens=tiktoken_count) as srv:
        first = solve(srv, tmp_path / "first", "--max-calls", "30")
        assert first.exit_code == 3, first.output  # stopped by the budget, answers cached
        dry = solve(srv, tmp_path / "dry", "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert srv.requests == 30
        _, cached, would = numbers(dry.output, "requests:")
        prompt, completion, *_ = numbers(dry.output, "tokens:")
        assert cached >= 30 and "the mean of the cached answers" in dry.output
        srv.reset_counters()
        rest = solve(srv, tmp_path / "rest")
        assert rest.exit_code == 0, rest.output
        sent = srv.requests
    counted = server_tokens(rest.output)
    assert sent <= would <= 2 * sent
    assert counted / 2 <= prompt + completion <= 2 * counted, (prompt + completion, counted)


def test_every_model_command_takes_dry_run() -> None:
    root = get_command(app)

    def commands(group: Any) -> list[Any]:
        subs = getattr(group, "commands", None)
        return [group] if subs is None else [c for s in subs.values() for c in commands(s)]

    takes_rpm = [c for c in commands(root) if any(p.name == "rpm" for p in c.params)]
    assert len(takes_rpm) >= 15
    assert all(any(p.name == "dry_run" for p in c.params) for c in takes_rpm)


def test_a_priced_model_gets_litellms_price(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate's cost is litellm's price of the estimated tokens (gpt-4o-mini is in its
    cost map); the upper bound prices every answer at max_tokens."""
    import litellm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    with LoopbackServer(responder=answer) as srv:
        dry = runner.invoke(app, ["solve", str(FRUIT), "--llm", "openai/gpt-4o-mini",
                                  "--api-base", srv.base_url, "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert srv.requests == 0
    prompt, completion, _, bound = numbers(dry.output, "tokens:")
    cost, cost_max = (float(x) for x in re.findall(r"\$([\d.]+)", next(
        ln for ln in dry.output.splitlines() if ln.startswith("cost:"))))
    price = sum(litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=prompt,
                                       completion_tokens=completion))
    price_max = sum(litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=prompt,
                                           completion_tokens=bound))
    assert 0 < cost == pytest.approx(price, abs=1e-4)
    assert cost_max == pytest.approx(price_max, abs=1e-4) and cost_max >= cost
