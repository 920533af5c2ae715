"""The README demo cold by model and threads: its wall time and what it computed.

Runs `gtsteer solve gtsteer/configs/schedule_meeting_dow.yaml --games 1 --llm local:<model>`
(what `make demo` runs, with the model named) once per model and `GTSTEER_LOCAL_THREADS`
value, each in an empty response cache, one at a time, nothing else loading a model (run it
under `flock /tmp/gtsteer-model.lock`). A model's first row is the reference: the other rows
give their speed-up over it, and whether every sampled dialogue and payoff came out the same
(a hash of the instance's terminals file), since llama.cpp splits a product's rows among
threads but computes each value on one thread. Beside each row, llama.cpp's own `llama-bench`
on the same GGUF and threads (64-token prompts, 32 generated tokens, flash attention off as
gtsteer runs) says how fast this machine was at the time: the VM's speed moves from day to
day, so a wall time from another day compares only through its reference. Writes the
`bench_demo` section of docs/BENCHMARKS.md (`bench_demo_<label>` with `--label`, so models
measured in separate runs keep their sections).

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab demo \
        [--models smollm2-135m,qwen2.5-coder-0.5b] [--threads 1,2] [--label L]
        [--no-write]
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from gtsteer.llm.backends.local import parse_local_model
from lab.bench import benchdoc, llama_tools

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab demo"

START, END = benchdoc.markers("bench_demo")


def section_name(label: str) -> str:
    """`bench_demo` (START/END), or `bench_demo_<label>` for a labelled run."""
    return "bench_demo" + (f"_{label}" if label else "")


def digest(data: bytes) -> str:
    """The short sha256 the tables print for a run's output (`terminals (sha256)`): equal
    digests, byte-identical dialogues and payoffs."""
    return hashlib.sha256(data).hexdigest()[:12]


def run_demo(model: str, threads: int) -> dict:
    terminals_file = "games/0.terminals.jsonl"
    wall, files = benchdoc.run_cold(
        [*benchdoc.demo_args(), "--llm", f"local:{model}", "-q"],
        {"GTSTEER_LOCAL_THREADS": str(threads)},
        "bench-demo-",
        read=("summary.json", terminals_file))
    summary, terminals = json.loads(files["summary.json"]), files[terminals_file]
    metrics = summary["metrics"]
    return {"model": model, "threads": threads, "wall_s": round(wall, 1),
            "new_calls": summary["llm_calls"]["new_calls"],
            "nash_conv": metrics.get("nash_conv"), "cfr_gain": metrics.get("cfr_gain"),
            "terminals": digest(terminals)}


def reference(bins: dict[str, Path], model: str, threads: int) -> dict[str, float]:
    """llama-bench's prompt and generation tokens/s for `model` at `threads`."""
    path = parse_local_model(f"local:{model}").resolve_path()
    cmd = llama_tools.llama_bench_command(bins, path, threads, 64, 32)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return llama_tools.llama_bench_speeds(out)


def fmt(value: object) -> str:
    if isinstance(value, dict):  # a metric with its interval: the mean is what one game has
        value = value.get("mean")
    return f"{value:+.3f}" if isinstance(value, float) else str(value)


def speeds(ref: dict[str, float] | None) -> str:
    return f"{ref['pp']:.0f} / {ref['tg']:.1f}" if ref else "not measured"


def render(rows: list[dict], command: str, commit: str, label: str = "") -> str:
    lines = [("| model | threads | wall, cold | speed-up | new calls | NashConv | CFR gain"
              " | terminals (sha256) | same as the reference | llama-bench prompt / generated "
              "tokens/s |"),
             "|---|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    for row in rows:
        ref = next(r for r in rows if r["model"] == row["model"])
        same = "reference" if row is ref else ("yes" if row["terminals"] == ref["terminals"]
                                               else "**no**")
        lines.append(f"| `{row['model']}` | {row['threads']} | {row['wall_s']:.0f} s | "
                     f"{ref['wall_s'] / row['wall_s']:.2f}x | {row['new_calls']} | "
                     f"{fmt(row['nash_conv'])} | {fmt(row['cfr_gain'])} | `{row['terminals']}` | "
                     f"{same} | {speeds(row.get('llama_bench'))} |")
    start, end = benchdoc.markers(section_name(label))
    demo = " ".join(benchdoc.demo_args())
    title = ("The README demo cold, per model and thread count"
             + (f" ({label})" if label else ""))
    return f"""{start}
## {title}

Command: `{command}`
Machine: {benchdoc.machine_line(commit=commit)}. Each row: `gtsteer {demo} --llm local:<model>`
in an empty response cache with `GTSTEER_LOCAL_THREADS` set, one run at a time. Speed-up: the
model's first row's wall time over this row's. Terminals: a hash of every sampled dialogue with its
payoffs (`games/0.terminals.jsonl`).

{chr(10).join(lines)}
{end}"""


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    ap.add_argument("--threads", default="1,2", help="The first is the reference.")
    ap.add_argument("--label", default="", help="Names this run's section of the doc.")
    ap.add_argument("--doc", default=str(benchdoc.DOC))
    ap.add_argument("--no-write", action="store_true", help="Print the section only.")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    commit = benchdoc.commit(["gtsteer"])
    bins = llama_tools.build(("llama-bench",))
    rows = []
    for model in models:
        for n in threads:
            speed = reference(bins, model, n)  # the machine's speed, once per model and threads
            print(f"{model}, {n} thread(s) ...", flush=True)
            rows.append({**run_demo(model, n), "llama_bench": speed})
            print(json.dumps(rows[-1]), flush=True)
    command = (f"flock /tmp/gtsteer-model.lock .venv/bin/python -m lab demo "
               f"--models {','.join(models)} --threads {','.join(map(str, threads))}"
               + (f" --label {args.label}" if args.label else ""))
    section = render(rows, command, commit, args.label)
    print(section)
    if not args.no_write:
        benchdoc.write_section(Path(args.doc), *benchdoc.markers(section_name(args.label)),
                               section)


if __name__ == "__main__":
    main()
