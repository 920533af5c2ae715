"""Verdict-game study: naive vs strategic questioner on court, interrogation and the Turing test.

Runs `gtsteer eval verdict` on each config (every judge wording x temperature) and writes the
win rates with 95% Wilson intervals into the `study_verdict` section of docs/BENCHMARKS.md,
next to the paper's single unqualified number (strategic 64% vs naive 27%, arXiv 2501.18455).
Quality numbers, not timings: they may be measured on a busy machine, only slowly.

    .venv/bin/python -m lab verdict [--llm local] [--games 10] [--breadth 10]
        [--configs court,interrogation,turing_test] [--doc docs/BENCHMARKS.md]
"""

from __future__ import annotations

import datetime
from pathlib import Path

from gtsteer.runs import eval_verdict
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_verdict import VerdictEvalReport, VerdictOptions
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab verdict"

DOC = benchdoc.DOC
START, END = benchdoc.markers("study_verdict")


def _pct(rate: float, low: float, high: float) -> str:
    return f"{rate:.0%} [{low:.0%}, {high:.0%}]"


def section(reports: list[VerdictEvalReport], command: str) -> str:
    lines = [
        START,
        "## Verdict games: naive vs strategic questioner",
        "",
        (
            f"Command: `{command}` ({datetime.date.today().isoformat()}). Each row: one judge"
            " wording (0 = the config's `judge.prompt`, then its `alternative_prompts`) at one"
            " judge temperature; win rate of the questioner with a 95% Wilson interval. The paper"
            " reports strategic 64% vs naive 27% for a court game with one GPT-4o judge whose"
            " prompt favours the strategic side; no interval, no code."
        ),
        "",
    ]
    for rep in reports:
        lines += [
            (
                f"### {rep.domain} ({rep.questioner}, target verdict `{rep.target_verdict}`,"
                f" model `{rep.model}`, {rep.games} games per cell, breadth {rep.breadth},"
                f" depth {rep.depth})"
            ),
            "",
            "| judge prompt | T | naive | strategic |",
            "|---|---|---|---|",
        ]
        settings = sorted({(c.prompt_index, c.temperature) for c in rep.cells})
        for p, t in settings:
            cells = {c.policy: c.win for c in rep.cells
                     if (c.prompt_index, c.temperature) == (p, t)}
            lines.append(f"| {p} | {t:g} | " + " | ".join(
                _pct(cells[n].accuracy, cells[n].ci_low, cells[n].ci_high)
                for n in ("naive", "strategic")
            ) + " |")
        tot = rep.totals
        lines.append("| all | | " + " | ".join(
            _pct(tot[n].accuracy, tot[n].ci_low, tot[n].ci_high) for n in ("naive", "strategic")
        ) + " |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--games", type=int, default=10)
    ap.add_argument("--breadth", type=int, default=10)
    ap.add_argument("--configs", default="court,interrogation,turing_test")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "verdict-study")
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    reports = []
    for name in args.configs.split(","):
        reports.append(eval_verdict.run(
            ROOT / "gtsteer" / "configs" / f"{name}.yaml",
            RunContext.of(llm=args.llm, out=args.out / name),
            VerdictOptions(games=args.games, breadth=args.breadth)))
    command = (f"python -m lab verdict --llm {args.llm} --games {args.games}"
               f" --breadth {args.breadth} --configs {args.configs}")
    benchdoc.write_section(args.doc, START, END, section(reports, command))
    print(f"wrote {args.doc}")


if __name__ == "__main__":
    main()
