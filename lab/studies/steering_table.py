"""The cross-model steering table (the paper's Tables 2-5): its section of docs/BENCHMARKS.md
and docs/steering_table.png.

1. Judges are validated first (`gtsteer eval judge` on gtsteer/data/judge_labelled.yaml): each
   candidate's accuracy per config and variant with a Wilson interval against chance.
2. For every config, the first judge of `--judges` that passes there (interval above chance,
   in the variant whose interval starts higher) is that config's judge for every writer; a
   config where none passes is listed as refused, not measured.
3. For every (config, writer): `gtsteer eval steering` with that judge and
   `--validate-judge`, K messages per instruction: accuracy with a 95% Wilson interval, chance,
   the share of instructed messages that name their value (against unguided ones) and the
   share of empty messages (nothing but punctuation and blanks).

Each (config, writer) report is saved under --results, so the script can run one writer at a
time (each run short, under the shared model lock) and `--render-only` writes the doc from
what is saved; every model answer is cached, so a rerun makes no new call.

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab steering-table \
        --samples 2 --models local:smollm2-135m --no-write
    .venv/bin/python -m lab steering-table --render-only
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from gtsteer.evals.prompts import DEFINED, PLAIN
from gtsteer.evals.validation import ClassifierValidation
from gtsteer.runs import eval_judge, eval_steering
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import DEFAULT_LABELLED, JudgeOptions, ValidationReport
from gtsteer.runs.eval_steering import SteeringOptions, SteeringReport
from gtsteer.runs.output import pyplot
from gtsteer.solvers.metrics import wilson
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_config

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab steering-table"

DOC = benchdoc.DOC
PNG = ROOT / "docs" / "steering_table.png"
START, END = benchdoc.markers("steering_table")
WRITERS = ["local:gemma3-270m", "local:smollm2-135m", "local:qwen2.5-coder-0.5b",
           "local:qwen2.5-coder-1.5b"]
CONFIGS = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "gtsteer" / "configs").glob("*.yaml"))]
JUDGES = ["embed"]
_CONTENT = re.compile(r"[A-Za-z0-9]")


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def empty_share(report: SteeringReport) -> tuple[int, int]:
    """Messages with no letter or digit ("", "...") among every generated message."""
    messages = {(s.instruction, s.instance, s.outcome): s.message for s in report.samples}
    return sum(not _CONTENT.search(m) for m in messages.values()), len(messages)


# ---- judges -----------------------------------------------------------------------------------


def validate(candidates: list[str], configs: list[str],
             results: Path) -> list[ClassifierValidation]:
    """Every candidate on every config's labelled messages (cached; saved per judge)."""
    found = []
    for judge in candidates:
        report = eval_judge.run([repo_config(c) for c in configs],
                                RunContext.of(out=results / "judges" / safe(judge),
                                              progress=False),
                                JudgeOptions(judges=[judge], labelled=DEFAULT_LABELLED))
        found += report.validations
    return found


def saved_validations(results: Path) -> list[ClassifierValidation]:
    found = []
    for path in sorted((results / "judges").glob("*/judge.json")):
        found += ValidationReport.model_validate_json(path.read_text()).validations
    return found


def judge_for(config_name: str, judges: list[str], validations: list[ClassifierValidation]):
    """(judge, variant) for a config: the first judge that passes there, in the variant whose
    interval on the labelled messages starts higher; None when no judge passes."""
    for judge in judges:
        passing = [v for v in validations if v.config == config_name and v.passes
                   and _same_judge(v.judge, judge)]
        if passing:
            best = max(passing, key=lambda v: (v.accuracy.ci_low, v.variant == PLAIN))
            return judge, best.variant
    return None


def _same_judge(reported: str, spelled: str) -> bool:
    """`embed` is reported as `embed:all-MiniLM-L6-v2`."""
    return reported == spelled or (spelled == "embed" and reported.startswith("embed:"))


# ---- the table --------------------------------------------------------------------------------


def measure(configs: list[str], writers: list[str], judges: list[str], samples: int,
            validations: list[ClassifierValidation], results: Path) -> None:
    from gtsteer.domains import load_spec

    for config in configs:
        spec = load_spec(repo_config(config))
        chosen = judge_for(spec.name, judges, validations)
        if chosen is None:
            print(f"== {config}: refused, no judge in {judges} passes its labelled messages")
            continue
        judge, variant = chosen
        for writer in writers:
            print(f"== {config} · {writer} · judge {judge} ({variant})", flush=True)
            out = results / "runs" / f"{Path(config).stem}-{safe(writer)}-k{samples}"
            try:
                eval_steering.run(repo_config(config),
                                  RunContext.of(llm=writer, reader=judge, out=out,
                                                progress=False),
                                  SteeringOptions(samples=samples, variants=(variant,),
                                                  validate_classifier_on=DEFAULT_LABELLED))
            except Exception as exc:  # noqa: BLE001 - one failed pair must not lose the others
                print(f"   failed: {type(exc).__name__}: {exc}")


def saved_reports(results: Path, samples: int) -> list[SteeringReport]:
    return [SteeringReport.model_validate_json(p.read_text())
            for p in sorted((results / "runs").glob(f"*-k{samples}/steering.json"))]


def row_of(report: SteeringReport) -> dict:
    run = report.runs[0]
    rows = run.per_instruction
    named = sum(r.mention_rate for r in rows) / len(rows)
    base = sum(r.mention_base_rate for r in rows) / len(rows)
    empty, total = empty_share(report)
    return {
        "config": Path(report.config).stem, "writer": report.model,
        "judge": report.classifier_model, "variant": run.variant,
        "accuracy": run.aggregate, "chance": run.chance, "named": named, "named_base": base,
        "empty": wilson(empty, total), "per_value": {r.value: r.accuracy for r in rows},
    }


def render(validations: list[ClassifierValidation], reports: list[SteeringReport], samples: int,
           command: str, judges: list[str]) -> str:
    lines = [
        START,
        "## Steering across models, one validated judge (the paper's Tables 2-5)",
        "",
        f"Command: `{command}` · {benchdoc.machine_line(commit=benchdoc.commit())}",
        "",
        "### The judges on hand-labelled messages",
        "",
        ("`gtsteer eval judge` on gtsteer/data/judge_labelled.yaml: messages written for the"
         " check (not by any model under test), 6 per day and 8 per tone or style, whose label"
         " a reader cannot miss. Accuracy with a 95% Wilson interval; a judge passes a config"
         " when the interval's lower end is above chance. Likelihood judges are calibrated on"
         " content-free messages; `embed` is the nearest value text by MiniLM cosine (the value"
         " name, or \"name: definition\" with definitions)."),
        "",
        "| judge | config | without definitions | with definitions | chance |",
        "|---|---|---:|---:|---:|",
    ]
    def acc(a) -> str:
        return f"{pct(a.accuracy)} [{pct(a.ci_low)}, {pct(a.ci_high)}]"

    cells: dict[tuple[str, str], dict[str, ClassifierValidation]] = {}
    for v in validations:
        cells.setdefault((v.judge, v.config), {})[v.variant] = v
    for (judge, config), by in cells.items():
        shown = {k: (f"**{acc(x.accuracy)}**" if x.passes else acc(x.accuracy))
                 for k, x in by.items()}
        chance = next(iter(by.values())).chance
        lines.append(f"| `{judge}` | {config} | {shown.get(PLAIN, '—')} |"
                     f" {shown.get(DEFINED, '—')} | {pct(chance)} |")
    lines += [
        "",
        "Bold: passes (lower end above chance).",
        "",
        "### Steering accuracy per writer",
        "",
        (f"{samples} messages per instruction at the game's first decision, each judged by the"
         f" config's judge: the first of {', '.join(f'`{j}`' for j in judges)} that passes"
         " there (in its variant whose interval on the labelled messages starts higher), the"
         " same judge for every writer. \"Names"
         " it\": share of instructed messages containing the instructed word, against unguided"
         " messages (meaningful for days; tones and styles are rarely named). Empty: messages"
         " with no letter or digit, of all generated (instructed and unguided)."),
        "",
        "| config | writer | judge | accuracy (95% CI) | chance | names it vs unguided | empty |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    rows = [row_of(r) for r in reports if r.runs]
    for row in rows:
        e = row["empty"]
        lines.append(
            f"| {row['config']} | `{row['writer']}` | `{row['judge']}` ({row['variant']}) |"
            f" {acc(row['accuracy'])} | {pct(row['chance'])} |"
            f" {pct(row['named'])} vs {pct(row['named_base'])} | {e.correct}/{e.n} |"
        )
    names = {v.config for v in validations}
    measured = {r["config"] for r in rows}
    refused = sorted(n for n in names if n not in measured)
    if refused:
        lines += ["", "Not measured (no judge passed its labelled messages): "
                  + ", ".join(refused) + "."]
    lines += ["", "![accuracy vs chance](steering_table.png)", "", END]
    return "\n".join(lines) + "\n"


def figure(reports: list[SteeringReport], path: Path) -> None:
    plt = pyplot()
    import numpy as np

    rows = [row_of(r) for r in reports if r.runs]
    if not rows:
        return
    configs = list(dict.fromkeys(r["config"] for r in rows))
    writers = list(dict.fromkeys(r["writer"] for r in rows))
    width = 0.8 / len(writers)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.6 * len(configs) + 2), 4.2))
    for i, writer in enumerate(writers):
        for j, config in enumerate(configs):
            row = next((r for r in rows if (r["config"], r["writer"]) == (config, writer)), None)
            if row is None:
                continue
            a = row["accuracy"]
            x = j - 0.4 + (i + 0.5) * width
            ax.bar(x, a.accuracy, width, color=f"C{i}", label=writer if j == 0 else None)
            ax.errorbar(x, a.accuracy, yerr=[[a.accuracy - a.ci_low], [a.ci_high - a.accuracy]],
                        color="black", capsize=2, lw=1)
    for j, config in enumerate(configs):
        chance = next(r["chance"] for r in rows if r["config"] == config)
        ax.hlines(chance, j - 0.45, j + 0.45, colors="red", linestyles="--",
                  label="chance" if j == 0 else "_nolegend_")
    ax.set_xticks(np.arange(len(configs)), configs, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("steering accuracy (95% Wilson)")
    ax.set_title("Steering accuracy vs chance, one validated judge per domain", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2, help="messages per instruction")
    parser.add_argument("--models", nargs="+", default=WRITERS, help="writers")
    parser.add_argument("--configs", nargs="+", default=CONFIGS)
    parser.add_argument("--judges", nargs="+", default=JUDGES,
                        help="judges for the table, in order of preference")
    parser.add_argument("--candidates", nargs="*", default=None,
                        help="judges to validate now (default: --judges); saved ones are kept")
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "steering-table")
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--png", type=Path, default=PNG)
    parser.add_argument("--render-only", action="store_true",
                        help="write the doc from saved reports; no model is loaded")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    if not args.render_only:
        validate(args.judges if args.candidates is None else args.candidates, args.configs,
                 args.results)
        measure(args.configs, args.models, args.judges, args.samples,
                saved_validations(args.results), args.results)
    validations = saved_validations(args.results)
    reports = saved_reports(args.results, args.samples)
    command = "python -m lab steering-table" + " ".join(
        [""] + (sys.argv[1:] if argv is None else argv))
    section = render(validations, reports, args.samples, command, args.judges)
    print(section)
    summary = {"validations": [v.model_dump() for v in validations],
               "rows": [json.loads(json.dumps(row_of(r), default=lambda o: o.model_dump()))
                        for r in reports if r.runs]}
    (args.results / "table.json").parent.mkdir(parents=True, exist_ok=True)
    (args.results / "table.json").write_text(json.dumps(summary, indent=2))
    if not args.no_write:
        figure(reports, args.png)
        benchdoc.write_section(args.doc, START, END, section)


if __name__ == "__main__":
    main()
