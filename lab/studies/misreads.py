"""Counter-proposals read as agreements (issue 57, item 4): on solved meeting trees, how often
does the small reward reader pay a dialogue whose reply names another day?

In the one-reply meeting a reply that names a different day than the proposal is a
counter-proposal nobody answers, so no meeting is settled; the reader should pay both 0. A
terminal of a solved tree (`gtsteer solve`'s `games/<i>.terminals.jsonl`) records both
messages and the payoffs the reader's answers gave, so every counter-proposal terminal can be
checked without a model call: a non-zero payoff there is a misread. The first day a message
names is its proposal (`schedule_meeting.proposed_day`, the same reading the greedy
responder uses). A payoff of 0 is also what an agreement on a day either player is away
pays, so the count is a lower bound on misreads; where the payoff is non-zero, the days whose
preferences give exactly that payoff (free for both) say which day the reader settled on.

    python -m lab misreads results/solve-meeting --data docs/data/misreads --doc docs/BENCHMARKS.md

Per-instance counts go to `--data` (one JSON a run); `--render-only` writes the section from
there. Each number is read from those files.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from gtsteer.domains import load_spec
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import (
    OUT_OF_OFFICE,
    PREFERENCES,
    days_of,
    parse_days,
    proposed_day,
)
from gtsteer.runs.atomic import write_text
from gtsteer.solvers.metrics import mean_ci, wilson
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_config, repo_relative
from lab.bench.docsection import markers, wrap, write_section
from lab.studies.table1 import pct

COMMAND = "python -m lab misreads"
SECTION = "misreads"
DOC = ROOT / "docs" / "BENCHMARKS.md"
DATA = ROOT / "docs" / "data" / "misreads"


class InstanceCount(BaseModel):
    """One solved instance's terminals, by what the reply does to the proposal."""

    instance: int
    terminals: int
    counter: int  # the reply names another day first
    counter_paid: int  # ... and the reader paid it (a misread)
    counter_paid_proposal: int  # ... on the proposed day
    counter_paid_counter: int  # ... on the reply's day
    same: int  # the reply names the proposed day first
    same_paid: int


class RunCounts(BaseModel):
    """A solve run's counts: where they came from and one row per instance."""

    name: str
    config: str
    model: str
    num_llm_seeds: int | list[int]
    instances: list[InstanceCount]


def count_game(game: dict, terminals: Sequence[dict], days: list[str]) -> InstanceCount:
    """The counts of one instance from its record (`games/<i>.json`) and its terminals."""
    info = game["instance"]["private_info"]
    away = [set(parse_days(p[OUT_OF_OFFICE])) for p in info]
    prefs = [parse_counts(p[PREFERENCES]) for p in info]
    count = InstanceCount(instance=game["index"], terminals=len(terminals), counter=0,
                          counter_paid=0, counter_paid_proposal=0, counter_paid_counter=0,
                          same=0, same_paid=0)
    for terminal in terminals:
        turns = terminal["turns"]
        if len(turns) < 2:
            continue
        offered, reply = (proposed_day(days, t["text"]) for t in turns[:2])
        paid = any(r != 0 for r in terminal["raw"])
        settled = {d for d in days if paid and all(
            d not in away[p] and prefs[p].get(d) == terminal["raw"][p] for p in range(2))}
        if offered is not None and reply is not None and reply != offered:
            count.counter += 1
            count.counter_paid += paid
            count.counter_paid_proposal += offered in settled
            count.counter_paid_counter += reply in settled
        elif offered is not None and reply == offered:
            count.same += 1
            count.same_paid += paid
    return count


def count_run(folder: Path, name: str) -> RunCounts:
    """Every instance of a finished `gtsteer solve` run folder of a meeting config."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    spec = load_spec(repo_config(summary["config"]))
    if spec.domain != "schedule_meeting":
        raise ValueError(f"{folder}: a {spec.domain} run; misreads reads meeting runs")
    days = days_of(spec)
    rows = []
    for record in sorted((folder / "games").glob("*.json"), key=lambda p: int(p.stem)):
        game = json.loads(record.read_text(encoding="utf-8"))
        lines = record.with_suffix(".terminals.jsonl")
        if game.get("status") != "solved" or not lines.is_file():
            continue
        terminals = [json.loads(x) for x in lines.read_text(encoding="utf-8").splitlines() if x]
        rows.append(count_game(game, terminals, days))
    if not rows:
        raise ValueError(f"{folder}: no solved instance with its terminals")
    return RunCounts(name=name, config=summary["config"], model=summary["model"],
                     num_llm_seeds=spec.num_llm_seeds, instances=rows)


def render(runs: Sequence[RunCounts], data: str) -> str:
    """The section: per run, the misread share pooled over terminals (Wilson) and its mean
    over instances (Student-t), with the acceptances beside it."""
    lines = [
        "## Counter-proposals read as agreements",
        "",
        f"Written by `{COMMAND} --render-only --data {data}` from the per-instance counts"
        f" there (each from a solve run's terminals, no model call). A *counter-proposal* is a"
        " terminal whose reply names another day first than the proposal: in the one-reply"
        " meeting nobody answers it, so the reader should pay 0, and a paid one is a misread"
        " (a lower bound: an agreement on an away day also pays 0). *on proposed / reply's"
        " day*: the paid ones whose payoff matches that day. Pooled shares carry a 95% Wilson"
        " interval (terminals of one instance are not independent, so the mean over instances"
        " with its Student-t interval is the one to read).",
        "",
        "| run | config | S | instances | counter-proposals | paid (misread), pooled"
        " | per instance [95% t] | on proposed day | on reply's day | same-day replies paid |",
        "|---|---|---|---:|---:|---|---|---:|---:|---|",
    ]
    for run in runs:
        rows = run.instances
        counter = sum(r.counter for r in rows)
        paid = sum(r.counter_paid for r in rows)
        pooled = wilson(paid, counter)
        shares = [r.counter_paid / r.counter for r in rows if r.counter]
        m = mean_ci(shares) if len(shares) > 1 else None
        per = "—" if m is None or m.ci_low is None or m.ci_high is None else \
            f"{pct(m.mean)} [{pct(m.ci_low)}, {pct(m.ci_high)}]"
        same = wilson(sum(r.same_paid for r in rows), sum(r.same for r in rows))
        lines.append(
            f"| `{run.name}` | `{run.config}` | {run.num_llm_seeds} | {len(rows)} | {counter}"
            f" | {paid} ({pct(pooled.accuracy)} [{pct(pooled.ci_low)}, {pct(pooled.ci_high)}])"
            f" | {per} | {sum(r.counter_paid_proposal for r in rows)}"
            f" | {sum(r.counter_paid_counter for r in rows)}"
            f" | {same.correct} of {same.n} ({pct(same.accuracy)}) |")
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="finished `gtsteer solve` folders")
    parser.add_argument("--name", action="append", default=None,
                        help="a row name per run (default: the folder's name)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.render_only and not args.runs:
        parser.error("give solve run folders, or --render-only")
    if args.name is not None and len(args.name) != len(args.runs):
        parser.error("--name: one per run")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if not args.render_only:
        args.data.mkdir(parents=True, exist_ok=True)
        for i, folder in enumerate(args.runs):
            name = args.name[i] if args.name else folder.name
            counts = count_run(folder, name)
            write_text(args.data / f"{name}.json", counts.model_dump_json(indent=1) + "\n")
    runs = [RunCounts.model_validate_json(p.read_text(encoding="utf-8"))
            for p in sorted(args.data.glob("*.json"))]
    text = render(runs, repo_relative(args.data.resolve()))
    start, end = markers(SECTION)
    write_section(args.doc, start, end, wrap(start, end, text))
    print(text)


if __name__ == "__main__":
    main()
