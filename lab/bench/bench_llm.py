"""Benchmark the LLM layer and record the numbers in docs/BENCHMARKS.md.

Measures the embedded local models (load time, prompt and generated tokens/s, each against the
first in the same run), the response cache (hit latency and throughput), and bounded
concurrency against the loopback OpenAI-compatible server used by the tests. Only the section
between the `bench_llm` markers is rewritten, so other benchmarks can share the file.

    .venv/bin/python -m lab llm            # everything, writes docs/BENCHMARKS.md
    .venv/bin/python -m lab llm --no-write # print only
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from gtsteer.llm import LLM, ResponseCache
from gtsteer.testing import LoopbackServer
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab llm"

START, END = benchdoc.markers("bench_llm")
console = Console(stderr=True)


# ---- measurements --------------------------------------------------------------------------


def bench_local(gen_tokens: int, repeats: int, threads: int, model: str) -> dict[str, Any]:
    """Load time, prompt (prefill) tokens/s and generated tokens/s of one embedded model
    (`local:<model>`, prompted as that model is: a chat template for SmolLM2)."""
    from gtsteer.llm.backends import local as local_module

    local_module.close_engines()  # engines are cached per path, context and threads
    # Reuse off: every repeat must evaluate the whole prompt for prefill to be measured.
    name = f"local:{model}"
    backend: Any = local_module.LocalBackend(name, threads=threads, prefix_cache_mb=0)
    llm = LLM(name, backend=backend, use_cache=False)
    backend.choice.resolve_path()  # assemble first; time only the load
    start = time.perf_counter()
    backend.llama()
    load_s = time.perf_counter() - start

    long_prompt = " ".join(
        f"Villager {i} says the wolf is hiding near the old mill." for i in range(40)
    )
    short_prompt = "Here is a long story about a village, a mill and a wolf. Once upon a time,"
    prefill, generate, long_tokens = [], [], 0
    for r in range(repeats):
        c = llm.generate_sync(long_prompt + f" ({r})", max_tokens=1, temperature=0.0)
        prefill.append(c.usage.prompt_tokens / c.usage.latency_s)
        long_tokens = c.usage.prompt_tokens
        c = llm.generate_sync(short_prompt, seed=r, max_tokens=gen_tokens, temperature=0.8)
        generate.append(c.usage.completion_tokens / c.usage.latency_s)
    return {
        "model": model,
        "file": backend.path.name,
        "vocab": backend.llama().n_vocab(),
        "threads": threads,
        "load_s": load_s,
        "long_prompt_tokens": long_tokens,
        "prefill_tps": statistics.median(prefill),
        "gen_tps": statistics.median(generate),
        "gen_tokens": gen_tokens,
        **bench_structured(backend, threads, repeats),
    }


#: The structured answer's token budget (a rambling model is cut there).
STRUCTURED_MAX_TOKENS = 96
TRADE_PROMPT = (
    "Ana: I have plenty of apples. Would you give me a kiwi for two apples?\n"
    "Ben: Make it two apples and a banana and the kiwi is yours.\n"
    "Ana: Fine, two apples and a banana for your kiwi. Deal.\n\n"
    "The trade they agreed on, as JSON:\n"
)


def bench_structured(backend: Any, threads: int, repeats: int) -> dict[str, Any]:
    """Grammar-constrained tokens/s on the fruit-trade extraction schema, greedy so that both
    samplers emit the same tokens: llama-cpp-python's stock sampler (grammar over the whole
    vocabulary first) against the backend's (grammar checked on the sampled token first).
    The two alternate within each repeat, so load on a shared machine hits both alike."""
    from llama_cpp import Llama, LlamaGrammar

    from gtsteer.domains.fruit_trade import FRUITS, trade_model

    # max_items: a full basket under gtsteer/configs/trade_fruit_tone.yaml (max_count 3 x 4 fruits).
    trade = trade_model(("Ana", "Ben"), tuple(FRUITS), 3 * len(FRUITS))
    schema = json.dumps(trade.model_json_schema())
    fast = backend.llama()
    stock = Llama(
        model_path=str(backend.path), n_ctx=backend.n_ctx, n_threads=threads, verbose=False
    )
    rates: dict[str, list[float]] = {"stock": [], "fast": []}
    texts: dict[str, str] = {}
    tokens, finish = 0, "stop"
    try:
        for _ in range(repeats):
            for name, model in (("stock", stock), ("fast", fast)):
                grammar = LlamaGrammar.from_json_schema(schema, verbose=False)
                model.reset()
                start = time.perf_counter()
                out: Any = model.create_completion(  # not streamed: one response
                    TRADE_PROMPT, max_tokens=STRUCTURED_MAX_TOKENS, temperature=0.0,
                    grammar=grammar,
                )
                elapsed = time.perf_counter() - start
                tokens = out["usage"]["completion_tokens"]
                rates[name].append(tokens / elapsed)
                texts[name] = out["choices"][0]["text"]
                finish = out["choices"][0]["finish_reason"]
    finally:
        stock.close()
    # A model that rambles inside a string (SmolLM2 here) is cut at max_tokens: the grammar
    # still held for every token, which is what is timed; only a finished object must parse.
    complete = finish != "length"
    if complete:
        json.loads(texts["fast"])
    if texts["fast"] != texts["stock"]:
        raise AssertionError(f"greedy outputs differ: {texts}")
    sampler = fast._sampler  # the GrammarCheckedSampler of the last constrained completion
    resampled = sampler.resampled_tokens / tokens
    stock_tps, fast_tps = statistics.median(rates["stock"]), statistics.median(rates["fast"])
    return {
        "structured_tokens": tokens,
        "structured_complete": complete,
        "structured_stock_tps": stock_tps,
        "structured_fast_tps": fast_tps,
        "structured_speedup": fast_tps / stock_tps,
        "structured_resampled": resampled,
        "structured_load": os.getloadavg()[0],
    }


async def _timed_hits(llm: LLM, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        result = await llm.generate(f"cache entry {i}", seed=i, max_tokens=32)
        times.append(time.perf_counter() - start)
        assert result.cached
    return times


async def _fill(llm: LLM, n: int) -> None:
    for i in range(n):
        await llm.generate(f"cache entry {i}", seed=i, max_tokens=32)


def bench_cache(entries: int) -> dict[str, Any]:
    """Hits through LLM.generate (key hashing + SQLite read + JSON decode) on a fresh cache."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "responses")
        llm = LLM("fake", cache=cache)
        start = time.perf_counter()
        asyncio.run(_fill(llm, entries))
        fill_s = time.perf_counter() - start
        times = asyncio.run(_timed_hits(llm, entries))
        assert llm.usage.cache_hits == entries and llm.usage.new_calls == entries
        times_ms = sorted(t * 1000 for t in times)
        cache.close()
    return {
        "entries": entries,
        "miss_write_ms": fill_s / entries * 1000,
        "mean_ms": statistics.fmean(times_ms),
        "p50_ms": times_ms[len(times_ms) // 2],
        "p99_ms": times_ms[min(len(times_ms) - 1, int(len(times_ms) * 0.99))],
        "hits_per_s": entries / (sum(times_ms) / 1000),
    }


async def _burst(llm: LLM, n: int, tag: str) -> float:
    start = time.perf_counter()
    await asyncio.gather(*(llm.generate(f"{tag} request {i}", seed=i) for i in range(n)))
    return time.perf_counter() - start


def bench_concurrency(requests: int, latency_s: float, levels: list[int]) -> dict[str, Any]:
    """Wall time of `requests` uncached calls to a server answering after `latency_s`."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-dummy")
    walls: dict[int, float] = {}
    with LoopbackServer(latency_s=latency_s) as server:
        for level in levels:
            llm = LLM(
                "openai/test-model",
                api_base=server.base_url,
                use_cache=False,
                max_concurrency=level,
            )
            asyncio.run(_burst(llm, 2, f"warm-{level}"))  # import litellm, open connections
            server.reset_counters()
            walls[level] = asyncio.run(_burst(llm, requests, f"c{level}"))
            assert server.requests == requests and server.max_in_flight <= level
            console.log(f"concurrency {level}: {walls[level]:.2f} s")
    return {
        "requests": requests,
        "latency_ms": latency_s * 1000,
        "walls": walls,
        "speedup": walls[levels[0]] / walls[levels[-1]],
        "levels": levels,
    }


# ---- report --------------------------------------------------------------------------------


def model_ratios(local: list[dict]) -> list[str]:
    """Generation speed of each model against the first one, thread count by thread count."""
    base = local[0]["model"]
    by = {(r["model"], r["threads"]): r["gen_tps"] for r in local}
    ratios = [
        f"`{m}` / `{base}` at {t} thread{'s' if t > 1 else ''}: **{v / by[(base, t)]:.2f}x**"
        for (m, t), v in by.items() if m != base and (base, t) in by
    ]
    return [f"Generated tokens/s, {'; '.join(ratios)} (same run).", ""] if ratios else []


def render(
    command: str, machine: str, local: list[dict] | None, cache: dict, conc: dict
) -> str:
    lo, hi = conc["levels"][0], conc["levels"][-1]
    lines = [START, "## LLM layer", "", f"Command: `{command}`  ", f"Machine: {machine}", ""]
    if local:
        first = local[0]
        how = (
            "Prefill: one long prompt ("
            + ", ".join(dict.fromkeys(f"{r['long_prompt_tokens']} tokens for `{r['model']}`"
                                      for r in local))
            + "; a chat model's count includes its chat template); generation: "
            f"{first['gen_tokens']} tokens at temperature 0.8; medians of the repeats. "
            "Load time is llama.cpp's load of the already assembled GGUF."
        )
        structured_how = (
            "Structured: the fruit-trade extraction (`trade_model`, up to "
            f"{STRUCTURED_MAX_TOKENS} tokens of JSON, "
            "greedy, so both samplers emit the same tokens; prompt included; the token count "
            "per model is in the table), "
            "llama-cpp-python's stock sampler (JSON-schema grammar over the whole vocabulary "
            "before top-k) against gtsteer's (`local.sampling`: the grammar checks the sampled"
            " token first, then the top 40, and runs over the whole vocabulary only when it"
            " rejects them all; the share of such tokens is in the last column). The two alternate "
            "within each repeat; medians. Generation speed without a grammar (above) is the "
            "ceiling."
        )
        lines += [
            "### Local models (llama.cpp, `GTSTEER_LOCAL_THREADS`)",
            "",
            how,
            "",
            ("| model | file (vocabulary) | threads | load time | prompt tokens/s"
             " | generated tokens/s |"),
            "|---|---|---|---|---|---|",
            *(
                f"| `local:{r['model']}` | {r['file']} ({r['vocab'] // 1000}k) | {r['threads']} "
                f"| {r['load_s']:.2f} s | {r['prefill_tps']:.0f} | {r['gen_tps']:.1f} |"
                for r in local
            ),
            "",
            *model_ratios(local),
            structured_how,
            "",
            (
                "| model | threads | tokens | structured tokens/s, stock "
                "| structured tokens/s, gtsteer | speedup | load average after "
                "| tokens needing the full grammar |"
            ),
            "|---|---|---|---|---|---|---|---|",
            *(
                f"| `local:{r['model']}` | {r['threads']} | {r['structured_tokens']}"
                f"{'' if r['structured_complete'] else ' (cut, JSON unfinished)'} "
                f"| {r['structured_stock_tps']:.1f} "
                f"| {r['structured_fast_tps']:.1f} | **{r['structured_speedup']:.1f}x** "
                f"| {r['structured_load']:.1f} | {r['structured_resampled']:.0%} |"
                for r in local
            ),
            "",
        ]
    cache_title = f"### Response cache ({cache['entries']} entries, fresh cache, via LLM.generate)"
    conc_title = (
        f"### Concurrency ({conc['requests']} uncached requests via litellm to the loopback "
        f"OpenAI-compatible server, {conc['latency_ms']:.0f} ms latency each)"
    )
    lines += [
        cache_title,
        "",
        "| measure | value |",
        "|---|---|",
        f"| hit latency mean | {cache['mean_ms']:.3f} ms |",
        f"| hit latency p50 / p99 | {cache['p50_ms']:.3f} / {cache['p99_ms']:.3f} ms |",
        f"| hit throughput (sequential) | {cache['hits_per_s']:.0f} hits/s |",
        f"| miss + write (fake backend) | {cache['miss_write_ms']:.3f} ms per call |",
        "",
        conc_title,
        "",
        "| max_concurrency | wall time |",
        "|---|---|",
        *(f"| {level} | {wall:.2f} s |" for level, wall in conc["walls"].items()),
        "",
        f"Speedup {hi} vs {lo}: **{conc['speedup']:.1f}x** (goal: at least 12x).",
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "BENCHMARKS.md")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the file")
    parser.add_argument("--skip-local", action="store_true", help="skip the local model")
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--threads", default="1,2", help="llama.cpp thread counts to measure")
    parser.add_argument("--models", default="gemma3-270m,smollm2-135m",
                        help="embedded models to measure (the first is the ratios' base)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache-entries", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args(argv)

    command = "python -m lab llm " + " ".join(argv if argv is not None else sys.argv[1:])
    machine = benchdoc.machine_line(
        load_when="at start",
        note=" (the machine is shared with other jobs; numbers taken under load are lower bounds).",
    )
    console.log(f"machine: {machine}")
    local: list[dict] | None = None
    if not args.skip_local:
        local = []
        for model in args.models.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                with console.status(f"{model}, {threads} threads: load, prefill, generation"):
                    local.append(bench_local(args.gen_tokens, args.repeats, threads, model))
                console.log(f"local: {local[-1]}")
    with console.status(f"cache: {args.cache_entries} misses then hits"):
        cache = bench_cache(args.cache_entries)
    console.log(f"cache: {cache}")
    with console.status("concurrency against the loopback server"):
        conc = bench_concurrency(args.requests, args.latency_ms / 1000, [1, 16])
    section = render(command.strip(), machine, local, cache, conc)
    print(section)
    if not args.no_write:
        benchdoc.write_section(args.out, START, END, section)
        console.log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
