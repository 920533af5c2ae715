"""Per proposer instruction, how often a solved meeting game's dialogues were read as agreed,
and on the instructed day: the demo's check against the steering numbers
(docs/notebook/demo-instance.md).

Reads `games/<i>.terminals.jsonl` and `games/<i>.json` of a `gtsteer solve` run of a meeting
config. The terminals hold payoffs, not the day the reward model read, so each payoff pair is
decoded back to the day(s) that pay it under the instance's private information; a pair that
several days pay is counted as agreed on an unknown day, and a day that pays both players 0
(both away) cannot be told from no agreement.

    .venv/bin/python -m lab demo-outcomes [--results results/schedule_meeting_dow-local-0]
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

from gtsteer.domains import load_spec
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import (
    OUT_OF_OFFICE,
    PREFERENCES,
    days_of,
    meeting_values,
    parse_days,
)
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab demo-outcomes"


def outcome_table(results: Path, config: Path, instance: int = 0) -> str:
    days = days_of(load_spec(config))
    record = json.loads((results / "games" / f"{instance}.json").read_text(encoding="utf-8"))
    info = record["instance"]["private_info"]
    away = [parse_days(i[OUT_OF_OFFICE]) for i in info]
    prefs = [parse_counts(i[PREFERENCES]) for i in info]
    paying: dict[tuple[float, ...], list[str]] = collections.defaultdict(list)
    for day in days:
        paying[tuple(meeting_values(day, away, prefs))].append(day)
    nothing = tuple(meeting_values(None, away, prefs))
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    path = results / "games" / f"{instance}.terminals.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        told = next(t["instruction"] for t in row["turns"] if t["instruction"] is not None)
        paid = tuple(row["returns"])
        counts[told]["terminals"] += 1
        if paid != nothing:
            counts[told]["agreed"] += 1
            counts[told]["same"] += paying.get(paid) == [told]
    order = [v for v in ("any", *days) if v in counts] + sorted(set(counts) - {"any", *days})
    lines = ["| first speaker told to propose | terminals | read as agreed | on that same day |",
             "|---|---:|---:|---:|"]
    lines += [f"| {'nothing (`any`)' if v == 'any' else v} | {counts[v]['terminals']} "
              f"| {counts[v]['agreed']} | {counts[v]['same']} |" for v in order]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path,
                        default=ROOT / "results" / "schedule_meeting_dow-local-0")
    parser.add_argument("--config", type=Path,
                        default=ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml")
    parser.add_argument("--instance", type=int, default=0)
    args = parser.parse_args(argv)
    print(outcome_table(args.results, args.config, args.instance))


if __name__ == "__main__":
    main()
