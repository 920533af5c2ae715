"""Benchmark prompt-prefix reuse and thread counts of the local model; writes docs/BENCHMARKS.md.

Side by side in one process, each with a fresh response cache (every call is a real model call)
and a freshly loaded model:
1. the README main job (the `make demo` command, read from the Makefile) with prefix reuse off
   (`GTSTEER_LOCAL_PREFIX_CACHE_MB=0`) and on (the default bound): wall time, prompt tokens
   requested and evaluated, cache memory;
2. the 7-player Werewolf bench game (the `make bench` settings), off and on;
3. llama.cpp threads 1 vs 2 on a fixed prefill-heavy workload (reuse off), with the machine
   otherwise idle and beside one busy process (a Python busy loop).
Only the section between the `bench_prefix` markers is rewritten, and with `--only` only the
subsections of the parts that ran (each names the command and machine that measured it).
Run on an idle machine:

    .venv/bin/python -m lab prefix                 # everything (tens of minutes)
    .venv/bin/python -m lab prefix --only threads  # one part
    .venv/bin/python -m lab prefix --smoke         # tiny sizes, prints only
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from lab.bench import benchdoc
from lab.bench.benchdoc import repo_config

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab prefix"

DOC = benchdoc.DOC
START, END = benchdoc.markers("bench_prefix")
CACHE_ENV = "GTSTEER_LOCAL_PREFIX_CACHE_MB"
console = Console(stderr=True)


# ---- helpers -------------------------------------------------------------------------------


@contextlib.contextmanager
def reuse(cache_mb: str | None) -> Iterator[Path]:
    """Fresh response cache, a fresh model load and the given prefix-cache bound (None: the
    default) for the duration of the block."""
    from gtsteer.llm.backends import local

    local.close_engines()
    saved = {k: os.environ.get(k) for k in (CACHE_ENV, "GTSTEER_CACHE_DIR", "GTSTEER_MODEL_DIR")}
    os.environ.setdefault(
        "GTSTEER_MODEL_DIR",
        str(Path(saved["GTSTEER_CACHE_DIR"] or Path.home() / ".cache/gtsteer") / "models"),
    )
    if cache_mb is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = cache_mb
    with tempfile.TemporaryDirectory(prefix="bench-prefix-") as tmp:
        os.environ["GTSTEER_CACHE_DIR"] = tmp
        try:
            yield Path(tmp)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def local_stats() -> dict[str, Any]:
    """Summed prefix-cache counters of the models loaded during a run (then closed)."""
    from gtsteer.llm.backends import local

    stats = local.engine_stats()
    total: dict[str, Any] = {
        "models": sorted({s["model"] for s in stats}),
        "tokens_requested": sum(s["tokens_requested"] for s in stats),
        "tokens_evaluated": sum(s["tokens_evaluated"] for s in stats),
        "peak_cache_mb": sum(s["peak_bytes"] for s in stats) / 2**20,
        "bound_mb": max((s["bound_bytes"] for s in stats), default=0) / 2**20,
        "restores": sum(s["restores"] for s in stats),
        "evictions": sum(s["evictions"] for s in stats),
    }
    local.close_engines()
    return total


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(label: str, fn: Any) -> dict[str, Any]:
    console.log(f"{label} ...")
    start = time.perf_counter()
    extra = fn() or {}
    wall = time.perf_counter() - start
    out = {"wall_s": wall, **extra, **local_stats(), "max_rss_mb": rss_mb()}
    console.log(f"{label}: {wall:.1f} s, {out['tokens_evaluated']}/{out['tokens_requested']} "
                "prompt tokens evaluated")
    return out


def smoke_config(tmp: Path, job: list[str]) -> list[str]:
    """The main job on a shrunken copy of its config (two actions, one LLM seed)."""
    config = Path(next(a for a in job if a.endswith((".yaml", ".yml"))))
    spec = yaml.safe_load((repo_config(config)).read_text())
    key = next(iter(spec["actions"]))
    spec["actions"] = {key: spec["actions"][key][:1] + spec["actions"][key][-1:]}
    spec["instruction_definitions"] = {}  # they would name the values trimmed above
    spec["num_llm_seeds"] = 1
    small = tmp / config.name
    small.write_text(yaml.safe_dump(spec, sort_keys=False))
    return [str(small) if a == str(config) else a for a in job]


# ---- the three measurements ----------------------------------------------------------------


def bench_main_job(job: list[str], variants: dict[str, str | None],
                   run_cli: Callable[[list[str]], object]) -> dict[str, Any]:
    """The README main job in this process, `run_cli(args)` being `gtsteer *args` (the command
    line is handed in: gtsteer/cli runs this benchmark, so this room does not import it)."""
    out: dict[str, Any] = {"command": "gtsteer " + " ".join(job)}
    for label, cache_mb in variants.items():
        with reuse(cache_mb) as tmp:
            args = [*job, "--quiet", "--out", str(tmp / "run")]

            def run(args: list[str] = args, tmp: Path = tmp) -> dict[str, Any]:
                run_cli(args)
                summary = json.loads((tmp / "run" / "summary.json").read_text())
                summary.pop("llm_calls", None)  # the rest must not depend on reuse
                return {"outcome": hashlib.sha256(
                    json.dumps(summary, sort_keys=True).encode()).hexdigest()[:12]}

            out[label] = timed(f"main job, reuse {label}", run)
    return out


def bench_werewolf(players: int, days: int, messages: int, variants: dict) -> dict[str, Any]:
    from gtsteer.werewolf.runner import GameRunner, create_game
    from gtsteer.werewolf.state import GameConfig
    from gtsteer.werewolf.store import GameStore

    out: dict[str, Any] = {
        "command": f"{players} players, --max-days {days} --max-messages {messages} --seed 0"
    }
    for label, cache_mb in variants.items():
        with reuse(cache_mb) as tmp:

            def run(tmp: Path = tmp) -> dict[str, Any]:
                store = GameStore(tmp / "werewolf.sqlite")
                config = GameConfig(n_players=players, max_days=days,
                                    max_messages_per_day=messages)
                state = create_game(store, config, seed=0, model="local",
                                    game_id="bench")  # fmt: skip
                state = GameRunner(store).run(state)
                calls = store.calls("bench")
                outcome = [(c.bot, c.purpose, c.response) for c in calls]
                return {"llm_calls": len(calls), "outcome": hashlib.sha256(
                    repr((outcome, state.winner, state.step)).encode()).hexdigest()[:12]}

            out[label] = timed(f"werewolf, reuse {label}", run)
    return out


THREAD_PROMPT = (
    "Villager {i} reports: " + " ".join(
        f"on night {n} a howl came from the {place}." for n, place in
        enumerate(("mill", "well", "bakery", "chapel", "bridge", "orchard", "forge") * 4)
    ) + " Who is the wolf?"
)


def bench_threads(prompts: int, max_tokens: int) -> list[dict[str, Any]]:
    """`prompts` distinct ~250-token prompts (no shared prefix, reuse off), greedy."""
    from gtsteer.llm import LLM
    from gtsteer.llm.backends.local import LocalBackend

    rows = []
    for busy in (False, True):
        for threads in (1, 2):
            competitor = (
                subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
            )
            try:
                with reuse("0"):
                    backend = LocalBackend("local", threads=threads, prefix_cache_mb=0)
                    llm = LLM("local", backend=backend, use_cache=False)
                    backend.llama()  # load outside the timing

                    def run(llm: LLM = llm) -> None:
                        for i in range(prompts):
                            llm.generate_sync(THREAD_PROMPT.format(i=i), temperature=0.0,
                                              max_tokens=max_tokens)  # fmt: skip

                    label = f"threads {threads}, {'busy' if busy else 'idle'}"
                    row = {"threads": threads, "busy": busy, "prompts": prompts,
                           "max_tokens": max_tokens}
                    rows.append({**row, **timed(label, run)})
            finally:
                if competitor is not None:
                    competitor.kill()
                    competitor.wait()
    return rows


# ---- report --------------------------------------------------------------------------------


def on_off_table(result: dict[str, Any], goal: float) -> list[str]:
    off, on = result["off"], result["on"]
    speedup = off["wall_s"] / on["wall_s"]
    rows = [
        ("| reuse | wall time | prompt tokens requested | prompt tokens evaluated "
        "| cache peak (bound) | restores | evictions |"),
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in (("off", off), ("on", on)):
        rows.append(
            f"| {label} | {r['wall_s']:.1f} s | {r['tokens_requested']} | {r['tokens_evaluated']} "
            f"| {r['peak_cache_mb']:.0f} MB ({r['bound_mb']:.0f} MB) | {r['restores']} "
            f"| {r['evictions']} |"
        )
    saved = 1 - on["tokens_evaluated"] / max(off["tokens_evaluated"], 1)
    same = "identical" if off["outcome"] == on["outcome"] else "DIFFERENT (a bug)"
    rows += ["", (f"Speedup: **{speedup:.2f}x** (goal: at least {goal}x); prompt tokens evaluated "
             f"{saved:.0%} fewer. Model: {', '.join(on['models'])}. Results with reuse on and "
             f"off: {same} (hash of every output: {off['outcome']} / {on['outcome']}).")]
    return rows


def args_tokens(row: dict[str, Any]) -> str:
    return f"{row['max_tokens']} new tokens each,"


#: Each part's subsection starts with its heading; a partial run finds the other parts'
#: subsections by these and keeps them as they were measured.
HEADINGS = {
    "main": "### README main job, cold",
    "werewolf": "### Werewolf bench game",
    "threads": "### Threads (`GTSTEER_LOCAL_THREADS`), beside a busy process or not",
}
PARTS = tuple(HEADINGS)
INTRO = [
    "## Local model: prompt-prefix reuse and threads",
    "",
    ("Each variant runs in the same process with a fresh response cache and a freshly loaded "
     "model, off first, then on (the default bound of `GTSTEER_LOCAL_PREFIX_CACHE_MB`). Outputs "
     "are identical either way (tests/llm/test_llm_local_prefix.py). Each part names the command "
     "that measured it and when; `--only` reruns some parts and keeps the others as they are."),
    "",
]


def render_part(part: str, result: Any, command: str, machine: str) -> list[str]:
    """One part's subsection: heading, the run that measured it, its numbers."""
    if part == "main":
        heading = f"{HEADINGS['main']}: `{result['command']}`"
    elif part == "werewolf":
        heading = f"{HEADINGS['werewolf']} ({result['command']})"
    else:
        heading = HEADINGS["threads"]
    lines = [heading, "", f"Command: `{command}`  ", f"Machine: {machine}.", ""]
    if part in ("main", "werewolf"):
        return lines + on_off_table(result, 1.4 if part == "main" else 1.5)
    first = result[0]
    lines += [(f"{first['prompts']} distinct prompts of "
               f"{first['tokens_requested'] // first['prompts']} tokens, greedy, "
               f"{args_tokens(first)} reuse off; \"busy\" = one Python busy loop running "
               "beside it. The default is one thread fewer than the usable cores (at "
               "least 1)."), "",
              "| threads | machine | wall time |", "|---|---|---|"]
    return lines + [f"| {r['threads']} | {'one busy process' if r['busy'] else 'idle'} "
                    f"| {r['wall_s']:.1f} s |" for r in result]


def split_parts(section: str | None) -> dict[str, str]:
    """The subsections of a written section by part, each from its heading to the next one."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    body = (section or "").replace(START, "").replace(END, "")
    for line in body.splitlines():
        if line.startswith(("## ", "### ")):
            part = next((p for p, h in HEADINGS.items() if line.startswith(h)), None)
            current = found.setdefault(part, []) if part else None
        if current is not None:
            current.append(line)
    return {part: "\n".join(lines).strip("\n") for part, lines in found.items()}


def render(results: dict[str, Any], measured: dict[str, tuple[str, str]],
           previous: str | None = None) -> str:
    """The whole section: the parts in `results` new (with their command and machine line from
    `measured`), every other part as it stands in `previous`."""
    kept = split_parts(previous)
    lines = [START, *INTRO]
    for part in PARTS:
        if part in results:
            lines += [*render_part(part, results[part], *measured[part]), ""]
        elif part in kept:
            lines += [kept[part], ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None,
         run_cli: Callable[[list[str]], object] | None = None) -> None:
    """`run_cli(args)` runs `gtsteer *args` in this process (`python -m lab prefix` hands it
    in); the main part needs it."""
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="run these parts; the others keep their written subsections")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (a shrunken main-job config, a 5-player one-day game, "
                             "two prompts per thread variant); prints, never writes")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    parts = args.only or list(PARTS)
    command = (f"{COMMAND} " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    commit = benchdoc.commit(["gtsteer"])  # the code measured, read before it runs
    variants: dict[str, str | None] = {"off": "0", "on": None}
    results: dict[str, Any] = {}
    measured: dict[str, tuple[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        job = benchdoc.demo_args()
        if args.smoke:
            job = smoke_config(Path(tmp), job)
        for part in (p for p in PARTS if p in parts):
            if part == "main":
                if run_cli is None:
                    parser.error(f"the main part runs the gtsteer CLI: run `{COMMAND}`")
                results[part] = bench_main_job(job, variants, run_cli)
            elif part == "werewolf":
                size = (5, 1, 1) if args.smoke else (7, 2, 3)
                results[part] = bench_werewolf(*size, variants)
            else:
                results[part] = bench_threads(2 if args.smoke else 12, 4 if args.smoke else 16)
            measured[part] = (command, benchdoc.machine_line(commit=commit))
    previous = None if args.smoke else benchdoc.read_section(DOC, START, END)
    section = render(results, measured, previous)
    print(section)
    if not (args.smoke or args.no_write):
        benchdoc.write_section(DOC, START, END, section)
        console.log(f"wrote {DOC}")


if __name__ == "__main__":
    main()
