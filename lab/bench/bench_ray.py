"""Benchmark `--ray` and write its section of docs/BENCHMARKS.md.

1. Ray's overhead on the fake model: starting `--ray local` (ray.init), a no-op task, and one
   fruit-trading instance (`gtsteer/configs/trade_fruit_tone.yaml`, fake model, fresh cache) solved
   serially vs as a Ray task with 2 workers: the extra wall time per instance is what the
   cache lookups through the driver's cache actor and the task round trip cost.
2. The README main job with the local model (`gtsteer/configs/schedule_meeting_dow.yaml`, `--games`
   instances, default 8): serial with one llama.cpp thread vs `--ray local --workers 2` (one
   CPU, so one thread, per task), both from a fresh cache, in one run; the wall-time ratio.
3. llama.cpp's own reference for what two 1-thread processes get out of this machine:
   `llama-bench -t 1` (prompt 64, generation 32 tokens) alone, then two at once; their summed
   tokens/s over the lone run, beside the Ray ratio (a short run: on this VM it moved from
   1.6x to 2.2x between runs, so it is a reference, not a ceiling).
4. The paper-scale projection: 200 instances x 3 domains from the measured per-instance cost
   of part 2, per worker count, at the 2-worker efficiency part 2 measured.

    .venv/bin/python -m lab ray                 # all parts (load the model: idle box)
    .venv/bin/python -m lab ray --fake-only     # part 1 only
    .venv/bin/python -m lab ray --games 2 --iterations 50 --no-write   # a smoke
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

if TYPE_CHECKING:
    from gtsteer.runs.solve_schema import SolveSummary
    from gtsteer.runs.units import RayOptions

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab ray"

FRUIT = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
README_CONFIG = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
DOC = benchdoc.DOC
START, END = benchdoc.markers("bench_ray")
WORKERS = 2
NOOP_TASKS = 200
PAPER_INSTANCES, PAPER_DOMAINS = 200, 3
PROJECTED_WORKERS = (1, 2, 4, 8, 16, 32, 64)


def _noop(unit: int, model: object) -> int:
    return unit


def solve_wall(config: Path, llm: str, games: int, iterations: int,
               ray: RayOptions | None) -> tuple[float, SolveSummary]:
    """Wall time of one `gtsteer.solve` from a fresh cache (and its summary)."""
    import gtsteer

    with benchdoc.fresh_cache("bench-ray-"), tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = gtsteer.solve(config, llm=llm, games=games, iterations=iterations, out=out,
                                quiet=True, ray=ray)
        return time.perf_counter() - start, summary


def fake_overhead(games: int, iterations: int) -> dict:
    import ray

    from gtsteer.llm import LLM
    from gtsteer.runs.executor import run_units
    from gtsteer.runs.ray_pool import connected
    from gtsteer.runs.units import RayOptions

    options = RayOptions("local", WORKERS)
    serial, serial_summary = solve_wall(FRUIT, "fake", games, iterations, None)
    start = time.perf_counter()
    with connected(options):
        started = time.perf_counter() - start
        run_units(_noop, list(range(WORKERS)), LLM("fake", use_cache=False), ray=options)  # warm
        start = time.perf_counter()
        run_units(_noop, list(range(NOOP_TASKS)), LLM("fake", use_cache=False), ray=options)
        noop = (time.perf_counter() - start) / NOOP_TASKS
        on_ray, ray_summary = solve_wall(FRUIT, "fake", games, iterations, options)
    assert not ray.is_initialized()
    same = serial_summary.metrics == ray_summary.metrics
    requests = serial_summary.llm_calls.requests / games
    return {"games": games, "init_s": started, "noop_ms": noop * 1e3, "serial_s": serial,
            "ray_s": on_ray, "same_metrics": same, "requests_per_instance": requests}


def local_ratio(config: Path, games: int, iterations: int) -> dict:
    from gtsteer.runs.units import RayOptions

    os.environ["GTSTEER_LOCAL_THREADS"] = "1"  # serial: one thread, as each Ray task gets
    serial, s1 = solve_wall(config, "local", games, iterations, None)
    print(f"local model, serial: {serial:.0f} s, {s1.num_solved} solved", flush=True)
    start = time.perf_counter()
    on_ray, s2 = solve_wall(config, "local", games, iterations, RayOptions("local", WORKERS))
    return {"config": config, "games": games, "serial_s": serial, "ray_s": on_ray,
            "ratio": serial / on_ray,
            "same_metrics": s1.metrics == s2.metrics, "solved": (s1.num_solved, s2.num_solved),
            "ray_total_s": time.perf_counter() - start}


def two_process_reference(model: str = "local:smollm2-135m") -> dict:
    """llama-bench at one thread alone, then two copies at once: (summed tokens/s) / alone,
    for prompt processing (pp) and generation (tg)."""
    import subprocess

    from gtsteer.llm.backends.local import parse_local_model
    from lab.bench import llama_tools

    bins = llama_tools.build()
    path = parse_local_model(model).resolve_path()
    cmd = llama_tools.llama_bench_command(bins, path, 1, 64, 32, reps=5)
    alone = llama_tools.llama_bench_speeds(
        subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    )
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(WORKERS)]
    pair = [llama_tools.llama_bench_speeds(proc.communicate()[0]) for proc in procs]
    ratio = {k: sum(p[k] for p in pair) / alone[k] for k in alone}
    return {"model": model, "alone": alone, "pair": pair, "ratio": ratio}


def projection(per_instance_s: float, efficiency: float) -> list[tuple[int, float]]:
    """Hours for 200 instances x 3 domains with w workers: one worker's time at the measured
    per-instance cost, divided by w at the 2-worker efficiency (an estimate, not a run)."""
    total = PAPER_INSTANCES * PAPER_DOMAINS * per_instance_s
    return [(w, total / (w * (efficiency if w > 1 else 1.0)) / 3600) for w in PROJECTED_WORKERS]


def render(fake: dict, local: dict | None, command: str, machine: str,
           reference: dict | None = None) -> str:
    extra = (fake["ray_s"] - fake["serial_s"] / WORKERS) / fake["games"] * 1e3
    overhead = (
        f"**Overhead on the fake model** ({WORKERS} workers, `--ray local`): starting Ray"
        f" {fake['init_s']:.1f} s; a no-op task {fake['noop_ms']:.1f} ms (mean of"
        f" {NOOP_TASKS}); {fake['games']} fruit instances"
        f" (~{fake['requests_per_instance']:.0f} model requests each, fresh cache) serial"
        f" {fake['serial_s']:.2f} s vs Ray {fake['ray_s']:.2f} s ({extra:+.0f} ms per instance"
        f" against a perfect {WORKERS}-way split); same metrics:"
        f" {'yes' if fake['same_metrics'] else 'NO'}. A fake instance costs well under a"
        " second, so this measures Ray's own cost (the task round trip, one cache-actor lookup"
        " per model request), not the speed-up a real model gets."
    )
    lines = ["## Ray scale-out (`--ray`)", "", f"`{command}` · {machine}", "", overhead, ""]
    if local is None:
        pending = ("**Local model**: not measured in this run (`--fake-only`); run the script"
                   " without it on an idle machine for the serial-vs-Ray ratio and the"
                   " projection.")
        lines += [pending, ""]
        return "\n".join(lines)
    if reference is not None:
        a, r = reference["alone"], reference["ratio"]
        pair = " + ".join(f"{p['tg']:.0f}" for p in reference["pair"])
        lines += [
            (f"**Reference, llama.cpp itself** (`llama-bench -t 1 -p 64 -n 32 -r 5`,"
             f" {reference['model']}, same run): alone {a['pp']:.0f} prompt / {a['tg']:.0f}"
             f" generated tokens/s; {WORKERS} copies at once"
             f" {pair} generated tokens/s:"
             f" **{r['pp']:.2f}x** prompt and **{r['tg']:.2f}x** generation over one process,"
             " two 1-thread llama.cpp processes side by side, beside the Ray ratio (a"
             " 30-second run, so it moves with the moment on this VM)."), ""]
    per = local["serial_s"] / local["games"]
    efficiency = local["ratio"] / WORKERS
    ratio = (
        f"**Local model** (`{Path(local['config']).resolve().relative_to(ROOT)}`,"
        f" {local['games']} instances, fresh cache, one llama.cpp thread per worker):"
        f" serial {local['serial_s']:.0f} s, `--ray local --workers {WORKERS}`"
        f" {local['ray_s']:.0f} s: **{local['ratio']:.2f}x** ({efficiency:.0%} of a perfect"
        f" split); same metrics: {'yes' if local['same_metrics'] else 'NO'}."
    )
    plan = (
        f"**Projection**: {PAPER_INSTANCES} instances x {PAPER_DOMAINS} domains at"
        f" {per:.0f} s per instance (one worker, measured above), at {efficiency:.0%}"
        " efficiency beyond one worker (the ratio above; more nodes add their own network"
        " cost, so read the hours as a lower bound):"
    )
    rows = [f"| {w} | {h:.1f} |" for w, h in projection(per, efficiency)]
    lines += [ratio, "", plan, "", "| workers | hours |", "|---:|---:|", *rows, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="local-model instances (part 2)")
    parser.add_argument("--config", type=Path, default=README_CONFIG,
                        help="local-model config (default: the README's; a smaller one only"
                             " for a smoke, with --no-write)")
    parser.add_argument("--fake-games", type=int, default=8, help="fake-model instances")
    parser.add_argument("--iterations", type=int, default=1000, help="CFR iterations")
    parser.add_argument("--fake-only", action="store_true", help="part 1 only (no model load)")
    parser.add_argument("--no-write", action="store_true", help="print, do not edit the doc")
    args = parser.parse_args(argv)
    if args.games < 1 or args.fake_games < 1:
        parser.error("--games and --fake-games must be >= 1")
    given = sys.argv[1:] if argv is None else argv
    command = "python -m lab ray" + "".join(f" {a}" for a in given)
    commit = benchdoc.commit(["gtsteer", "gtsteer bench ray"])
    fake = fake_overhead(args.fake_games, args.iterations)
    print(f"fake model: {fake}", flush=True)  # a run stopped in part 2 still shows part 1
    local = reference = None
    if not args.fake_only:
        reference = two_process_reference()
        print(f"llama-bench, one process vs {WORKERS}: {reference['ratio']}", flush=True)
        local = local_ratio(args.config, args.games, args.iterations)
    body = render(fake, local, command, benchdoc.machine_line(commit=commit), reference)
    print(body)
    if not args.no_write:
        benchdoc.write_section(DOC, START, END, benchdoc.wrap(START, END, body))


if __name__ == "__main__":
    main()
