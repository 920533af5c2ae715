"""The README main job in-process vs through llama-cpp-python's server; writes its section of
docs/BENCHMARKS.md.

Both runs solve `gtsteer solve gtsteer/configs/schedule_meeting_dow.yaml --games 1` with the same
GGUF (the embedded SmolLM2), the same seeds and a fresh response cache each; the server gets
`--n_threads` equal to the in-process backend's `GTSTEER_LOCAL_THREADS`. Reported: wall time,
new calls and calls per minute, and whether the payoffs agree (per-instance CFR values and
the metrics), since the two paths differ in sampler and chat-template rendering.

Run it under the model lock (it loads the model twice):

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab served [--threads 1] [--no-write]

`--slots 1,4` measures the concurrency gain of llama.cpp's C++ `llama-server` instead (built by
python -m lab llama-tools from the same vendored llama.cpp; llama-cpp-python's server takes one
request at a time): a fixed set of the README job's message requests (the responder's replies
to one-message openings, as the served path asks them), all sent at once through gtsteer
(`openai/smollm2` at the server's `--api-base`, no cache), to `llama-server --parallel N` for
each N, with the same `--threads`. Section `bench_served_slots` of docs/BENCHMARKS.md:

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab served --slots 1,4 [--calls 48]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.bench import benchdoc, llama_tools
from lab.bench.benchdoc import ROOT
from lab.bench.servers import CTX_PER_SLOT, LlamaCppServer, LlamaServer

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab served"

CONFIG = "gtsteer/configs/schedule_meeting_dow.yaml"
START, END = benchdoc.markers("bench_served")
SLOTS_START, SLOTS_END = benchdoc.markers("bench_served_slots")


def message_requests(calls: int) -> list:
    """`calls` of the README job's level-2 message requests as the served path sends them."""
    from gtsteer.binding import generate_instances, make_game
    from gtsteer.binding.prompts import Turn
    from gtsteer.domains import load_spec
    from gtsteer.llm import LLM

    spec = load_spec(ROOT / CONFIG)
    instance = generate_instances(spec, 1, 0)[0]
    served = LLM("openai/smollm2", api_base="http://127.0.0.1:9/v1", api_key="no-key")
    game = make_game(spec, instance, served, config=CONFIG)
    openings = [f"How about we meet on {day}?" for day in spec.params["days"]]
    out = [game.message_request([Turn(speaker=0, instruction="any", text=text)], 1, i, (0, o))
           for text in openings for i in game.instructions(1)
           for o in range(spec.samples_at(1))]
    return out[:calls]


def burst(base_url: str | None, requests: list) -> tuple[float, int]:
    """Wall time of all `requests` sent at once (gtsteer's own concurrency bound, 16) and the
    completion tokens they produced; `base_url` None: the in-process backend, same requests."""
    from gtsteer.llm import LLM

    llm = (LLM("local:smollm2-135m", use_cache=False) if base_url is None else
           LLM("openai/smollm2", api_base=base_url, api_key="no-key", use_cache=False))

    async def run() -> list:
        return await asyncio.gather(*(llm.generate(r.prompt, seed=r.seed, temperature=r.temperature,
                                                   max_tokens=r.max_tokens, stop=r.stop)
                                      for r in requests))

    start = time.perf_counter()
    done = asyncio.run(run())
    return time.perf_counter() - start, sum(c.usage.completion_tokens for c in done)


def slots_main(args: argparse.Namespace) -> None:
    from gtsteer.llm.backends.local import default_model_path

    bins = llama_tools.built()
    if bins is None:  # never compile for minutes while holding the model lock
        raise SystemExit(f"no llama-server under {llama_tools.tools_dir()}: run"
                         " `python -m lab llama-tools` first (without the model lock)")
    binary = bins["llama-server"]
    head = benchdoc.commit(["gtsteer", "scripts"])
    requests = message_requests(args.calls)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for slots in args.slots:
            server = LlamaCppServer(binary, default_model_path(), Path(tmp) / f"np{slots}.log",
                                    args.threads, slots)
            server.start()
            try:
                burst(server.base_url, requests[:2])  # warm-up: weights paged in, not timed
                load_before = os.getloadavg()[0]
                wall, tokens = burst(server.base_url, requests)
                load_after = os.getloadavg()[0]
            finally:
                server.kill()
            rows.append((slots, wall, tokens, load_before, load_after))
            print(f"--parallel {slots}: {len(requests)} calls in {wall:.1f} s, {tokens} tokens,"
                  f" load {load_before:.1f} -> {load_after:.1f}", flush=True)
    os.environ["GTSTEER_LOCAL_THREADS"] = str(args.threads)
    burst(None, requests[:2])  # model loaded, not timed
    load_before = os.getloadavg()[0]
    wall, tokens = burst(None, requests)
    rows.append(("in-process", wall, tokens, load_before, os.getloadavg()[0]))
    print(f"in-process: {len(requests)} calls in {wall:.1f} s, {tokens} tokens", flush=True)
    base = rows[0][1]
    def label(n: int | str) -> str:
        return (f"`llama-server --parallel {n}`" if n != "in-process" else
                "in-process `local:smollm2-135m`")

    table = [f"| {label(n)} | {wall:.1f} s | {len(requests) / (wall / 60):.0f} | "
             f"{tokens / wall:.1f} | {base / wall:.2f}x | {lb:.1f} / {la:.1f} |"
             for n, wall, tokens, lb, la in rows]
    body = "\n".join([
        "### Parallel slots: llama.cpp `llama-server --parallel N`",
        "",
        (f"{len(requests)} of the README job's message requests (`{CONFIG}`, instance 0, the"
         " responder's replies to 7 one-message openings, 8 instructions x 2 samples, as the"
         " served path asks them: plain prompt, 48 tokens at temperature 0.7), sent at once"
         " through gtsteer (`openai/smollm2`, up to 16 in flight, no cache) to `llama-server`"
         " built from the vendored llama.cpp (python -m lab llama-tools),"
         f" `--threads {args.threads}`"
         f" and `--ctx-size {CTX_PER_SLOT} x N`. "
         + benchdoc.machine_line(commit=head) + "; `uptime` load (1 min) before / after each"
         " burst in the last column (other agents' jobs shared the 2 CPUs). The last row sends"
         " the same requests to the in-process backend, same thread count."),
        "",
        "| server | wall | calls/minute | generated tokens/s | speed-up | load before / after |",
        "|---|---:|---:|---:|---:|---|",
        *table,
        "",
        ("Command: `flock /tmp/gtsteer-model.lock .venv/bin/python -m lab served"
         f" --slots {','.join(map(str, args.slots))} --calls {args.calls}"
         f" --threads {args.threads}`"),
    ])
    print(body)
    if not args.no_write:
        benchdoc.write_section(benchdoc.DOC, SLOTS_START, SLOTS_END,
                               benchdoc.wrap(SLOTS_START, SLOTS_END, body))


def solve(llm: list[str], threads: int, out: Path) -> tuple[float, dict]:
    """Wall time and summary.json of one cold `gtsteer solve` in a child process."""
    gtsteer = Path(sys.executable).with_name("gtsteer")
    env = {**os.environ, "GTSTEER_LOCAL_THREADS": str(threads)}
    with benchdoc.fresh_cache("bench-served-"):
        env["GTSTEER_CACHE_DIR"] = os.environ["GTSTEER_CACHE_DIR"]
        start = time.perf_counter()
        subprocess.run([str(gtsteer), "solve", CONFIG, "--games", "1", "-q", "--out", str(out),
                        *llm], cwd=ROOT, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - start
    return wall, json.loads((out / "summary.json").read_text())


def row(name: str, wall: float, summary: dict) -> str:
    calls = summary["llm_calls"]
    metrics = summary["metrics"] or {}
    gain = (metrics.get("cfr_gain") or {}).get("mean")
    per_min = calls["new_calls"] / (wall / 60)
    return (f"| {name} | {wall:.1f} s | {calls['new_calls']} | {per_min:.0f} | "
            f"{summary['num_solved']}/{summary['num_games']} | "
            f"{'—' if gain is None else f'{gain:+.4f}'} | {json.dumps(summary['llm_modes'])} |")


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--slots", type=lambda v: [int(x) for x in v.split(",")], default=None,
                        help="llama-server --parallel values to compare, e.g. 1,4")
    parser.add_argument("--calls", type=int, default=48, help="requests per burst (--slots)")
    args = parser.parse_args(argv)
    if args.slots:
        slots_main(args)
        return
    from gtsteer.llm.backends.local import default_model_path

    head = benchdoc.commit(["gtsteer", "scripts"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        local_wall, local = solve(["--llm", "local:smollm2-135m"], args.threads, root / "local")
        server = LlamaServer(default_model_path(), root / "server.log", threads=args.threads)
        server.start()
        try:
            served_wall, served = solve(["--llm", "openai/smollm2", "--api-base",
                                         server.base_url], args.threads, root / "served")
        finally:
            server.kill()
        same = local["metrics"] == served["metrics"]
    body = "\n".join([
        "### README main job: in-process vs llama.cpp server",
        "",
        (f"`gtsteer solve {CONFIG} --games 1`, cold cache each, {args.threads} thread(s) on"
         " both sides (`GTSTEER_LOCAL_THREADS` in-process, `--n_threads` for"
         " `python -m llama_cpp.server`, which serves one request at a time). "
         + benchdoc.machine_line(commit=head) + "."),
        "",
        "| run | wall time | new calls | calls/minute | solved | CFR gain | llm_modes |",
        "|---|---:|---:|---:|---|---:|---|",
        row("in-process `local:smollm2-135m`", local_wall, local),
        row("served `openai/smollm2`", served_wall, served),
        "",
        "Same metrics on both paths: " + ("yes." if same else
            "no; docs/SERVING.md (\"Same numbers as in-process?\") says why."),
        "",
        ("Command: `flock /tmp/gtsteer-model.lock .venv/bin/python -m lab served"
         f" --threads {args.threads}`"),
    ])
    print(body)
    if not args.no_write:
        benchdoc.write_section(benchdoc.DOC, START, END, benchdoc.wrap(START, END, body))


if __name__ == "__main__":
    main()
