"""Steering accuracy of the embedded models; writes its section of docs/BENCHMARKS.md.

For each (config, model): `gtsteer eval steering` with K messages per instruction, the same
model as classifier, with and without instruction definitions. The numbers say which embedded
model follows which instruction set, and so which model is the default and which domain the
README demo plays. Accuracy does not depend on timing, so this may run on a busy machine (set
GTSTEER_LOCAL_THREADS=1 there); answers are cached, so a rerun only re-renders.

    .venv/bin/python -m lab steering [--samples 8] [--models M ...] [--configs C ...]
"""

from __future__ import annotations

import datetime
import platform
import sys
from pathlib import Path

from gtsteer.evals.prompts import DEFINED, PLAIN
from gtsteer.runs import eval_steering
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_steering import SteeringOptions, SteeringReport
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_config

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab steering"

DOC = benchdoc.DOC
START, END = benchdoc.markers("bench_steering")
MODELS = ["local:gemma3-270m", "local:smollm2-135m"]
CONFIGS = ["gtsteer/configs/trade_fruit_tone.yaml", "gtsteer/configs/schedule_meeting_dow.yaml"]


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def cell(report: SteeringReport, variant: str) -> str:
    run = report.run(variant)
    if run is None:
        return "—"
    a = run.aggregate
    return f"{pct(a.accuracy)} [{pct(a.ci_low)}, {pct(a.ci_high)}]"


def per_instruction(report: SteeringReport) -> str:
    run = report.run(PLAIN)
    if run is None:
        return "—"
    return ", ".join(
        f"{r.value} {pct(r.accuracy.accuracy)} (base {pct(r.base_rate)}; names"
        f" {pct(r.mention_rate)} vs {pct(r.mention_base_rate)})"
        for r in run.per_instruction
    )


def mentions(report: SteeringReport) -> str:
    """Mean share of instructed messages naming their value, and of unguided ones naming it."""
    run = report.run(PLAIN)
    if run is None or not run.per_instruction:
        return "—"
    rows = run.per_instruction
    named = sum(r.mention_rate for r in rows) / len(rows)
    base = sum(r.mention_base_rate for r in rows) / len(rows)
    return f"{pct(named)} vs {pct(base)}"


def render(rows: list[tuple[str, str, SteeringReport | str]], command: str, samples: int) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        "## Steering accuracy of the embedded models",
        "",
        (f"Command: `{command}` · {now} · commit {benchdoc.commit()}"
         f" · Python {platform.python_version()}"),
        "",
        (f"{samples} messages per instruction at the game's first decision (the binding's own"
        " message prompt and seeds), each classified by argmax_z P(z | message) with the same"
        " model's log-likelihoods through `LLM.choose`. Accuracy with a 95% Wilson interval;"
        " chance is one over the number of instructions; the base rate is how often an"
        " unguided (`any`) message is classified as that instruction. \"Names it\" is the"
        " classifier-free check: the share of instructed messages that contain the instructed"
        " word (\"Tuesday\"), against the share of unguided messages that contain it."
        " Accuracy does not depend on machine load."),
        "",
        ("| config | model | no definitions | with definitions | chance | names it vs unguided"
         " | per instruction (no definitions) |"),
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for config, model, report in rows:
        name = Path(config).stem
        if isinstance(report, str):
            lines.append(f"| {name} | `{model}` | failed: {report} | | | | |")
            continue
        plain = report.run(PLAIN)
        chance = plain.chance if plain is not None else float("nan")
        lines.append(
            f"| {name} | `{model}` | {cell(report, PLAIN)} | {cell(report, DEFINED)} |"
            f" {pct(chance)} | {mentions(report)} | {per_instruction(report)} |"
        )
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8, help="messages per instruction")
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--configs", nargs="+", default=CONFIGS)
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "bench-steering")
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    def measure(config: str, model: str, folder: str) -> SteeringReport:
        report = eval_steering.run(repo_config(config),
                                   RunContext.of(llm=model, out=args.results / folder),
                                   SteeringOptions(samples=args.samples))
        report.config = config  # repo-relative in the doc
        return report

    rows = benchdoc.run_grid(args.configs, args.models, measure)
    command = "python -m lab steering" + " ".join(
        [""] + (sys.argv[1:] if argv is None else argv)
    )
    section = render(rows, command, args.samples)
    print(section)
    if not args.no_write:
        benchdoc.write_section(args.doc, START, END, section)


if __name__ == "__main__":
    main()
