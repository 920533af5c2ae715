"""Benchmark batched decoding in the local backend and write its section of docs/BENCHMARKS.md
(plus docs/bench_batch.png).

Measured in one run, on an otherwise idle machine, with llama.cpp's own tools beside gtsteer
(`gtsteer bench llama-tools` builds them from the vendored sources of the same llama-cpp-python):
1. Aggregate generated tokens/s and requests/minute at batch sizes 1, 2, 4, 8, 16 (B requests at
   once sharing a 128-token prompt, 32 new tokens each, prefix warm), per model and thread
   count; beside it `llama-batched-bench -npp 128 -ntg 32 -npl B -pps` (same GGUF, threads).
2. One sequence (64 new tokens) against `llama-bench -n 64`: the per-token cost of the Python
   loop around llama.cpp.
3. 16 concurrent requests sharing a long prefix (about 500 tokens), default batch vs
   `GTSTEER_LOCAL_BATCH=1`, cold prefix cache each.
4. The default beside one busy process (a pure-Python spinner on one core).
5. Optional (`--main-job`): the README main job cold, GTSTEER_LOCAL_BATCH=1 vs the default, and
   whether its numbers are identical.
6. Optional (`--werewolf`): one 7-player bot-only Werewolf game (`--max-days 2
   --max-messages 3 --seed 0`, model `local`), cold, GTSTEER_LOCAL_BATCH=1 vs B = 8, and
   whether its transcripts are identical.

    .venv/bin/gtsteer bench batch [--models smollm2-135m,qwen2.5-coder-0.5b]
        [--threads 1,2] [--batches 1,2,4,8,16] [--main-job] [--werewolf] [--no-write]
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time

from gtsteer.bench import benchdoc, llama_tools
from gtsteer.llm.backends.batch_decode import BATCH_ENV
from gtsteer.llm.backends.local import LocalBackend, close_engines, local_threads
from gtsteer.llm.backends.local_models import parse_local_model
from gtsteer.llm.types import GenerationRequest

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "gtsteer bench batch"

ROOT = benchdoc.ROOT
START, END = benchdoc.markers("bench_batch")
PNG = ROOT / "docs" / "bench_batch.png"
N_PROMPT, N_GEN = 128, 32
#: The batch size compared against one at a time in parts 3-5.
COMPARE_BATCH = 8
DEMO = benchdoc.demo_args()


def shared_prompt(backend: LocalBackend, n_tokens: int) -> str:
    """A prompt of about `n_tokens` tokens (as this model's template renders it)."""
    words = ("apples", "pears", "the market", "Bob", "Alice", "a fair trade", "bananas")
    text = ""
    i = 0
    while len(backend.engine().tokens(backend.render(GenerationRequest(prompt=text)))) < n_tokens:
        text += f"{words[i % 7].capitalize()} came up again in the talk, turn {i}. "
        i += 1
    return text


def timed(backend: LocalBackend, requests: list[GenerationRequest]) -> tuple[float, int]:
    async def burst() -> list:
        return await asyncio.gather(*(backend.complete(r) for r in requests))

    start = time.perf_counter()
    outs = asyncio.run(burst())
    return time.perf_counter() - start, sum(o.usage.completion_tokens for o in outs)


def throughput(model: str, threads: int, batch: int, prompt: str | None = None) -> dict:
    backend = LocalBackend(model, threads=threads, batch=batch)
    prompt = prompt or shared_prompt(backend, N_PROMPT)
    n = max(batch, 1)

    def reqs(offset: int) -> list[GenerationRequest]:
        return [GenerationRequest(prompt=prompt, seed=offset + i, temperature=0.8,
                                  max_tokens=N_GEN) for i in range(n)]  # fmt: skip

    timed(backend, reqs(10_000))  # warm: model loaded, the shared prompt in the prefix cache
    wall, tokens = timed(backend, reqs(0))
    repacked = backend.engine().repacked
    close_engines()
    return {"wall_s": wall, "tokens": tokens, "tokens_per_s": tokens / wall,
            "requests_per_min": 60 * n / wall, "repacked": repacked}  # fmt: skip


def single(model: str, threads: int) -> float:
    backend = LocalBackend(model, threads=threads, batch=1)
    request = GenerationRequest(prompt="Tell a long story about a fruit market.", seed=1,
                                temperature=0.8, max_tokens=64)  # fmt: skip
    timed(backend, [request.model_copy(update={"seed": 2})])
    wall, tokens = timed(backend, [request])
    close_engines()
    return tokens / wall


def long_prefix(model: str, threads: int, batch: int) -> float:
    backend = LocalBackend(model, threads=threads, batch=batch)
    head = shared_prompt(backend, 500)
    requests = [GenerationRequest(prompt=head + f" Message {i}: what does Alice say?", seed=i,
                                  temperature=0.8, max_tokens=24, stop=["\n\n"])
                for i in range(16)]  # fmt: skip
    backend.engine()
    wall, _ = timed(backend, requests)
    close_engines()
    return wall


def spin(stop: multiprocessing.Event) -> None:  # type: ignore[valid-type]
    while not stop.is_set():  # type: ignore[attr-defined]
        sum(range(1000))


def busy(model: str) -> dict:
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=spin, args=(stop,), daemon=True)
    spinner.start()
    try:
        threads = local_threads()
        return {"threads": threads, **throughput(model, threads, COMPARE_BATCH)}
    finally:
        stop.set()
        spinner.join()


def main_job(batch: int) -> dict:
    wall, files = benchdoc.run_cold(DEMO, {BATCH_ENV: str(batch)}, "bench-batch-main-")
    summary = json.loads(files["summary.json"])
    metrics = summary.get("metrics", summary)
    return {"wall_s": wall, "metrics": metrics}


def werewolf_game(batch: int) -> dict:
    """One cold bot-only game at GTSTEER_LOCAL_BATCH=batch: wall time and a hash of every call."""
    import hashlib

    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.state import GameConfig
    from gtsteer.werewolf.store import GameStore

    os.environ[BATCH_ENV] = str(batch)
    try:
        with benchdoc.fresh_cache("bench-batch-werewolf-") as cache:
            store = GameStore(cache / "werewolf.sqlite")
            start = time.perf_counter()
            state = create_game(store, GameConfig(n_players=7, max_days=2, max_messages_per_day=3),
                                seed=0, model="local", game_id="bench")  # fmt: skip
            state = GameRunner(store).run(state)
            wall = time.perf_counter() - start
            calls = [(c.bot, c.purpose, c.response) for c in store.calls("bench")]
    finally:
        os.environ.pop(BATCH_ENV, None)
        close_engines()
    digest = hashlib.sha256(repr((calls, state.winner, state.step)).encode()).hexdigest()[:12]
    return {"wall_s": wall, "calls": len(calls), "outcome": digest}


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=False)
    for ax, threads in zip(axes, sorted({r["threads"] for r in rows}), strict=False):
        for model in sorted({r["model"] for r in rows}):
            mine = [r for r in rows if r["model"] == model and r["threads"] == threads]
            bs = [r["batch"] for r in mine]
            ax.plot(bs, [r["tokens_per_s"] for r in mine], "o-", label=f"gtsteer {model}")
            ax.plot(bs, [r["llama"] for r in mine], "s--", label=f"llama-batched-bench {model}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequences decoded together (B)")
        ax.set_ylabel("generated tokens/s (aggregate)")
        ax.set_title(f"{threads} thread(s)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PNG, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.split("\n\n")[0])
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="1,2,4,8,16")
    parser.add_argument("--main-job", action="store_true")
    parser.add_argument("--werewolf", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    code = benchdoc.commit(["gtsteer", "scripts"])
    bins = llama_tools.build()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    threads_list = [int(t) for t in args.threads.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    rows, singles = [], []
    for model in models:
        path = parse_local_model(f"local:{model}").resolve_path()
        for threads in threads_list:
            refs = {True: llama_tools.batched_bench(bins, path, threads, N_PROMPT, N_GEN, batches)}
            for batch in batches:
                got = throughput(f"local:{model}", threads, batch)
                if got["repacked"] not in refs:  # the same kernels as gtsteer: --no-repack
                    refs[False] = llama_tools.batched_bench(
                        bins, path, threads, N_PROMPT, N_GEN, batches, repack=False
                    )
                ref = refs[got["repacked"]]
                rows.append({"model": model, "threads": threads, "batch": batch,
                             "llama": ref.get(batch, float("nan")), **got})  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
            singles.append({"model": model, "threads": threads,
                            "gtsteer": single(f"local:{model}", threads),
                            "llama_bench": llama_tools.llama_bench_tg(bins, path, threads)})
            print(json.dumps(singles[-1]), flush=True)
    smol = f"local:{models[0]}"
    prefix = {b: long_prefix(smol, 1, b) for b in (1, COMPARE_BATCH)}
    print("long prefix", prefix, flush=True)
    loaded = busy(smol)
    print("busy", loaded, flush=True)
    mains = {b: main_job(b) for b in (1, COMPARE_BATCH)} if args.main_job else {}
    games = {b: werewolf_game(b) for b in (1, COMPARE_BATCH)} if args.werewolf else {}
    print("werewolf", games, flush=True)
    body = render(rows, singles, prefix, loaded, mains, code, games)
    print(body)
    if not args.no_write:
        plot(rows)
        benchdoc.write_section(benchdoc.DOC, START, END, benchdoc.wrap(START, END, body))


def render(rows: list[dict], singles: list[dict], prefix: dict, loaded: dict, mains: dict,
           code: str, games: dict | None = None) -> str:  # fmt: skip
    default = COMPARE_BATCH
    lines = [
        "## Local model: batched decoding",
        "",
        "`gtsteer bench batch" + (" --main-job" if mains else "")
        + (" --werewolf" if games else "") + "`; "
        + benchdoc.machine_line(commit=code) + ". Reference in the same run: llama.cpp's own "
        "`llama-batched-bench -npp 128 -ntg 32 -npl B -pps` and `llama-bench -n 64`, built from "
        "the llama.cpp sources vendored in the llama-cpp-python 0.3.36 sdist "
        "(`gtsteer bench llama-tools`, `GGML_NATIVE=OFF`), same GGUF and threads, flash attention "
        f"`{llama_tools.FLASH_ATTN}` as in gtsteer's contexts.",
        "",
        ("B requests at once sharing a 128-token prompt (prefix warm), 32 new tokens each: "
        "aggregate generated tokens/s (ratio to llama-batched-bench at the same B) and requests "
        "per minute. ![batched decoding](bench_batch.png)"),
        "",
        ("| model | threads | B | weights | gtsteer tokens/s | llama-batched-bench tokens/s | "
        "ratio | requests/min |"),
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        weights = "default" if r["repacked"] else "`--no-repack`"
        lines.append(f"| {r['model']} | {r['threads']} | {r['batch']} | {weights} "
                     f"| {r['tokens_per_s']:.1f} | {r['llama']:.1f} "
                     f"| {r['tokens_per_s'] / r['llama']:.2f}x "
                     f"| {r['requests_per_min']:.0f} |")  # fmt: skip
    lines += ["", "One sequence, 64 new tokens, against `llama-bench -n 64`:", "",
              "| model | threads | gtsteer tokens/s | llama-bench tokens/s | ratio |",
              "|---|---:|---:|---:|---:|"]  # fmt: skip
    for s in singles:
        lines.append(f"| {s['model']} | {s['threads']} | {s['gtsteer']:.1f} | "
                     f"{s['llama_bench']:.1f} | {s['gtsteer'] / s['llama_bench']:.2f}x |")
    one, many = prefix[1], prefix[default]
    lines += [
        "",
        (f"16 concurrent requests sharing a ~500-token prefix (SmolLM2, 1 thread, cold prefix "
        f"cache): {one:.1f} s with `GTSTEER_LOCAL_BATCH=1`, {many:.1f} s with the default "
        f"B = {default}: **{one / many:.2f}x**."),
        "",
        (f"Beside one busy process (a Python spinner): default threads ({loaded['threads']}) and "
        f"B = {default}: {loaded['tokens_per_s']:.1f} tokens/s aggregate."),
    ]
    if mains:
        a, b = mains[1], mains[default]
        same = a["metrics"] == b["metrics"]
        lines += ["", f"README main job (`gtsteer {' '.join(DEMO)}`), cold cache: "
                  f"{a['wall_s']:.0f} s with B = 1, {b['wall_s']:.0f} s with B = {default} "
                  f"(**{a['wall_s'] / b['wall_s']:.2f}x**); metrics "
                  + ("identical." if same else "differ (see the run's summaries).")]  # fmt: skip
    if games:
        a, b = games[1], games[default]
        same = a["outcome"] == b["outcome"]
        lines += ["", "One 7-player bot-only Werewolf game (`--max-days 2 --max-messages 3 "
                  f"--seed 0`, model `local`), cold: {a['wall_s']:.0f} s with B = 1, "
                  f"{b['wall_s']:.0f} s with B = {default} "
                  f"(**{a['wall_s'] / b['wall_s']:.2f}x**, {a['calls']} model calls); every call "
                  + ("identical." if same else "NOT identical.")]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
