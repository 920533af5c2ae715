"""Where the model time of the README job and of a Table 1 instance goes, by phase.

Runs the README job (`gtsteer solve schedule_meeting_dow --games 1`, the Makefile's
`demo` recipe) with `--heldout --profile` cold, in an empty response cache: its solved tree is
exactly the README job's work and its fresh tree (the `fresh:` phases) what `--heldout` adds for a
Table 1 instance. Per phase: requests, new calls, prompt tokens requested and evaluated (after
prefix reuse), tokens generated and the share cleaning discarded, and seconds. Beside them,
llama.cpp's own `llama-bench` on the same GGUF and threads (before and after the run, averaged)
turns tokens into seconds (evaluated / prompt rate + generated / generation rate). A phase's
seconds above that are decodes slower than llama-bench's short-context ones, not Python
(docs/BENCHMARKS.md, "Reading the floors").

Three floors on the time, from what the calls ask for (`solve --profile` counts the tokens):
1. bit for bit: the prompt tokens an unbounded 64-token-block cache evaluates
   (`Usage.prompt_tokens_block_floor`), at llama-bench's 64-token prompt rate, and the one-token
   decodes of generation at llama.cpp's best batched generation rate (batched decoding can give
   the same bytes as one sequence at a time, docs/LOCAL.md);
2. any serving: the novel prompt tokens (`Usage.tokens_novel`: no earlier call held them as a
   prefix, and a token's KV entry depends on all before it) at llama.cpp's best prompt rate and
   the novel generated ones, one decode step of their sequence each, at the best batched
   generation rate;
3. every novel token at the best prompt rate.
The best prompt rate is the fastest of `llama-bench -p 512 -n 0 -ub C` over C and the 64-token
runs; the best generation rate the fastest of `llama-batched-bench` over B sequences. Each is the
faster of a run before the job and one after. Writes the `bench_profile` section of
docs/BENCHMARKS.md. Nothing else may load a model meanwhile:

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab profile [--model smollm2-135m]
        [--threads 2] [--no-write]
"""

from __future__ import annotations

import json
from pathlib import Path

from gtsteer.llm import ModelConfigError
from gtsteer.llm.backends.local import parse_local_model
from gtsteer.llm.usage import OPTIONAL_COUNTERS
from lab.bench import benchdoc, llama_tools
from lab.bench.bench_demo import reference
from lab.bench.bench_prefill import llama_prefill

COMMAND = "python -m lab profile"
#: llama-batched-bench's shape for the best generation rate: a prompt about a meeting
#: message's, shared by B sequences as a tree level's siblings share theirs.
GEN_PROMPT, GEN_TOKENS, GEN_SEQS = 192, 32, (1, 2, 4, 8, 16, 32, 64)
START, END = benchdoc.markers("bench_profile")


def at_rates(phase: dict, speed: dict[str, float]) -> float:
    """The phase's seconds at llama-bench's rates: prompt tokens evaluated, then generated."""
    evaluated = phase["prompt_tokens_evaluated"]
    if evaluated is None:
        evaluated = phase["prompt_tokens"]
    return evaluated / speed["pp"] + phase["completion_tokens"] / speed["tg"]


def _sum(phases: list[dict]) -> dict:
    keys = ("requests", "new_calls", "prompt_tokens", "completion_tokens", "wall_s",
            "generated_chars", "kept_chars")
    total = {k: sum(p[k] for p in phases) for k in keys}
    for optional in OPTIONAL_COUNTERS:
        values = [p.get(optional) for p in phases]
        total[optional] = (None if all(v is None for v in values)
                           else sum(v or 0 for v in values))
    return total


def floor_row(name: str, p: dict, single: dict[str, float], best: dict[str, float]) -> str:
    """A job's profiled seconds beside three floors, tightest first: its prompt tokens as an
    unbounded block cache evaluates them at llama-bench's fastest 64-token rate (`single`) and
    its generation's decodes at the best batched rate (the same answers bit for bit); its novel
    tokens with the generated ones at the best batched generation rate; every novel token at
    the best prompt rate."""
    novel = p.get("tokens_novel")
    if novel is None:
        return f"| {name} | {p['wall_s']:.1f} | not counted | | | | |"
    generated = p.get("tokens_novel_generated") or 0
    blocks = p.get("prompt_tokens_block_floor") or 0
    floors = (blocks / single["pp"] + p["completion_tokens"] / best["tg"],
              (novel - generated) / best["pp"] + generated / best["tg"],
              novel / best["pp"])
    cells = " | ".join(f"{f:.1f} ({f / p['wall_s']:.2f}x)" for f in floors)
    return f"| {name} | {p['wall_s']:.1f} | {blocks:,} | {novel:,} ({generated:,}) | {cells} |"


def _row(name: str, p: dict, speed: dict[str, float], total_s: float) -> str:
    evaluated = "" if p["prompt_tokens_evaluated"] is None else f"{p['prompt_tokens_evaluated']:,}"
    novel = ("" if p.get("tokens_novel") is None
             else f"{p['tokens_novel']:,} ({p.get('tokens_novel_generated') or 0:,})")
    discarded = ""
    if p["generated_chars"]:
        share = 1 - p["kept_chars"] / p["generated_chars"]
        discarded = f"{round(p['completion_tokens'] * share):,} ({share:.0%})"
    model_s = at_rates(p, speed)
    return (f"| {name} | {p['requests']:,} | {p['new_calls']:,} | {p['prompt_tokens']:,} | "
            f"{evaluated} | {p['completion_tokens']:,} | {discarded} | {novel} | "
            f"{p['wall_s']:.1f} | "
            f"{p['wall_s'] / total_s:.0%} | {model_s:.1f} |")


def render(profile: dict, speed: dict[str, float], wall_s: float, command: str,
           commit: str, model: str, threads: int, single: dict[str, float],
           best: dict[str, float]) -> str:
    phases = profile["phases"]
    total = profile["total_s"]
    lines = [("| phase | requests | new calls | prompt tokens | evaluated | generated | "
              "discarded by cleaning | novel | seconds | share | seconds at llama-bench rates |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [_row(name, p, speed, total) for name, p in phases.items()]
    solved = [p for name, p in phases.items() if not name.startswith("fresh: ")]
    fresh = [p for name, p in phases.items() if name.startswith("fresh: ")]
    lines.append(_row("**README job (solved tree)**", _sum(solved), speed, total))
    if fresh:
        lines.append(_row("**`--heldout`'s fresh tree**", _sum(fresh), speed, total))
    outside = total - sum(p["wall_s"] for p in phases.values())
    lines.append(f"| outside the phases (readers, metrics, I/O) | | | | | | | | {outside:.1f} | "
                 f"{outside / total:.0%} | |")
    floors = [("| job | seconds (phases) | prompt tokens, unbounded block cache | novel tokens"
               " (generated) | floor: bit for bit | floor: generation batched | floor: all at the"
               " prompt rate |"),
              "|---|---:|---:|---:|---:|---:|---:|",
              floor_row("README job (solved tree)", _sum(solved), single, best),
              floor_row("Table 1 instance (both trees)", _sum(solved + fresh), single, best)]
    return f"""{START}
## Cost by phase: the README job and a Table 1 instance

Command: `{command}`
Machine: {benchdoc.machine_line(commit=commit)}. One cold run of `gtsteer
{' '.join(benchdoc.demo_args())} --heldout --profile --llm local:{model}` with
`GTSTEER_LOCAL_THREADS={threads}` (its `profile.json`); {total:.0f} s profiled, {wall_s:.0f} s
for the whole process (model load and imports included). llama-bench on the same GGUF and
threads: {speed['pp']:.0f} prompt / {speed['tg']:.1f} generated tokens/s (mean of a run before
and one after). "Evaluated": prompt tokens the backend computed after prefix reuse.
"Discarded": generated tokens estimated by the share of characters cleaning dropped.
"Novel": prompt and generated tokens no earlier call had computed as a prefix (of them
generated).

{chr(10).join(lines)}

The floors, tightest first; each ratio is against the phases' seconds.
- **Bit for bit**: the same answers to the last bit need the same 64-token blocks, so at best a
  prompt evaluates what an unbounded cache, saving the state after every block and every prompt,
  would evaluate ("prompt tokens, unbounded block cache"), at llama-bench's 64-token rate above,
  the faster of the two runs ({single['pp']:.0f} tokens/s); generation, which batched decoding
  can do in the same bytes (docs/LOCAL.md), at the best generation rate below.
- **Generation batched**: every novel token must be evaluated for these answers (its KV entry
  depends on all tokens before it), a prompt token at best at llama.cpp's best prompt rate here,
  {best['pp']:.0f} tokens/s (the fastest of `llama-bench -p 512 -n 0 -ub C` for C of 16-512
  and the 64-token runs above), and a generated one, one decode step of its sequence, at
  llama.cpp's best aggregate generation rate, {best['tg']:.0f} tokens/s at B =
  {best['tg_seqs']:.0f} (`llama-batched-bench`, {GEN_PROMPT}-token shared prompt, {GEN_TOKENS}
  generated, the best of B = {', '.join(map(str, GEN_SEQS))} sequences).
- **All at the prompt rate**: every novel token at the best prompt rate. No reuse, batching or
  scheduling of the same calls finishes below it; only calls asking for fewer or other tokens.

Each best rate is the faster of a run before the job and one after.

{chr(10).join(floors)}
{END}"""


def best_rates(bins: dict[str, Path], path: Path, threads: int) -> dict[str, float]:
    """llama.cpp's fastest prompt rate over decode sizes and fastest aggregate generation rate
    over sequence counts (tokens/s), with the sequence count that gave it."""
    tg = llama_tools.batched_bench(bins, path, threads, GEN_PROMPT, GEN_TOKENS, list(GEN_SEQS))
    seqs = max(tg, key=lambda b: tg[b])
    return {"pp": max(llama_prefill(bins, path, threads).values()), "tg": tg[seqs],
            "tg_seqs": float(seqs)}


def fastest(*runs: dict[str, float]) -> dict[str, float]:
    """The fastest of several runs' rates, each key on its own (`tg_seqs` follows `tg`)."""
    best = {k: max(run[k] for run in runs) for k in ("pp", "tg")}
    tg_runs = [run for run in runs if "tg_seqs" in run]
    if tg_runs:
        best["tg_seqs"] = max(tg_runs, key=lambda run: run["tg"])["tg_seqs"]
    return best


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--doc", default=str(benchdoc.DOC))
    ap.add_argument("--no-write", action="store_true", help="Print the section only.")
    args = ap.parse_args(argv)
    # Checked before anything runs: fetching and building llama.cpp takes minutes.
    if args.threads < 1:
        ap.error(f"--threads: at least 1, got {args.threads}")
    try:
        model = parse_local_model(f"local:{args.model}")
    except ModelConfigError as exc:
        ap.error(f"--model: {exc}")
    commit = benchdoc.commit(["gtsteer"])
    bins = llama_tools.build(("llama-bench", "llama-batched-bench"))
    path = model.resolve_path()
    before = reference(bins, args.model, args.threads)
    best_before = best_rates(bins, path, args.threads)
    wall, files = benchdoc.run_cold(
        [*benchdoc.demo_args(), "--heldout", "--profile", "-q", "--llm", f"local:{args.model}"],
        {"GTSTEER_LOCAL_THREADS": str(args.threads)}, "bench-profile-",
        read=("profile.json",))
    after = reference(bins, args.model, args.threads)
    best_after = best_rates(bins, path, args.threads)
    single = fastest(before, after)
    best = fastest(best_before, best_after)
    best["pp"] = max(best["pp"], single["pp"])  # the 64-token runs may be the fastest
    speed = {k: (before[k] + after[k]) / 2 for k in ("pp", "tg")}
    profile = json.loads(files["profile.json"])
    print(json.dumps({"profile": profile, "llama_bench": [before, after],
                      "best": [best_before, best_after]}), flush=True)
    command = ("flock /tmp/gtsteer-model.lock .venv/bin/python -m lab profile "
               f"--model {args.model} --threads {args.threads}")
    section = render(profile, speed, wall, command, commit, args.model, args.threads, single, best)
    print(section)
    if not args.no_write:
        benchdoc.write_section(Path(args.doc), START, END, section)


if __name__ == "__main__":
    main()
