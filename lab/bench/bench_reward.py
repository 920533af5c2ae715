"""Reward-model error of the embedded models (the paper's Table 8); writes its section of
docs/BENCHMARKS.md.

For each (config with known payoffs, model): `gtsteer eval reward` with N templated dialogues
per outcome type, scored by the configured path (the LLM extracts what was agreed, code
computes the payoffs) and by the free path (the LLM states both payoffs itself). Errors do
not depend on machine load; answers are cached, so a rerun only re-renders.

    .venv/bin/python -m lab reward [--cases 10] [--models M ...] [--configs C ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from gtsteer.runs import eval_reward
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_reward import RewardOptions, RewardReport
from lab.bench import benchdoc

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab reward"

START, END = benchdoc.markers("bench_reward")
MODELS = ["local:gemma3-270m", "local:smollm2-135m"]
CONFIGS = ["gtsteer/configs/trade_fruit_tone.yaml", "gtsteer/configs/schedule_meeting_dow.yaml"]


def norm_cell(report: RewardReport, path: str, outcome: str) -> str:
    row = next(e for e in report.errors if e.path == path and e.outcome == outcome)
    norm = f"{row.norm.mean:.3f}"
    if row.norm.ci_low is not None and row.norm.ci_high is not None:
        norm += f" [{row.norm.ci_low:.3f}, {row.norm.ci_high:.3f}]"
    sgn = f"{100 * row.sign_flips.accuracy:.0f}%" if row.sign_flips is not None else "—"
    failed = f", {row.failures} failed" if row.failures else ""
    return f"{norm} / {sgn}{failed}"


def render(
    rows: list[tuple[str, str, RewardReport | str]], command: str, cases: int, commit: str
) -> str:
    outcomes = ["valid", "rejected", "incomplete", "all"]
    lines = [
        START,
        "## Reward model: error against known payoffs (Table 8)",
        "",
        f"Command: `{command}` · {benchdoc.machine_line(commit=commit)}",
        "",
        (f"{cases} templated two-message dialogues per outcome type with known payoffs "
         "(`gtsteer eval reward`). Each cell: Norm = mean |predicted - true| / payoff range "
         "over (dialogue, player) pairs, with its 95% interval, / Sgn = share of pairs whose "
         "sign flips (a true payoff of 0, e.g. no trade, counts as flipped by any nonzero "
         "prediction). *configured*: the LLM only extracts what was agreed, code computes the "
         "payoffs (what the games use); *free*: the LLM states both payoffs from everyone's "
         "private information. A failed case (no valid structured answer) is counted apart. "
         "Errors do not depend on machine load."),
        "",
        "| config | model | path | " + " | ".join(outcomes) + " |",
        "|---|---|---|" + "---|" * len(outcomes),
    ]
    for config, model, report in rows:
        name = Path(config).stem
        if isinstance(report, str):
            lines.append(f"| {name} | `{model}` | failed: {report} |" + " |" * len(outcomes))
            continue
        for path in report.paths:
            cells = " | ".join(norm_cell(report, path, o) for o in outcomes)
            lines.append(f"| {name} | `{model}` | {path} | {cells} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10, help="dialogues per outcome type")
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--configs", nargs="+", default=CONFIGS)
    parser.add_argument("--results", type=Path, default=benchdoc.ROOT / "results" / "bench-reward")
    parser.add_argument("--doc", type=Path, default=benchdoc.DOC)
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    command = "python -m lab reward " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]) if a != "--no-write")
    commit = benchdoc.commit(["gtsteer"])  # the code measured, read before it runs

    def measure(config: str, model: str, folder: str) -> RewardReport:
        return eval_reward.run(config, RunContext.of(llm=model, out=args.results / folder),
                               RewardOptions(cases=args.cases))

    rows = benchdoc.run_grid(args.configs, args.models, measure)
    section = render(rows, command.strip(), args.cases, commit)
    print(section)
    if not args.no_write:
        benchdoc.write_section(args.doc, START, END, section)


if __name__ == "__main__":
    main()
