"""The samples study (issue 24, docs/TABLE1.md): how much of the CFR gain is selection on
sampling noise, as the number of LLM samples per message grows?

For one config and each S in --seeds, the config is solved with `num_llm_seeds: S` over N
instances with `--heldout`: the in-sample CFR gain (on the samples CFR chose from) beside the
fresh-sample gain (the same policies replayed on S samples CFR never saw), with 95% Student-t
intervals over instances, and their paired difference per instance. Only the first mover's
opening decision is replayed exactly on fresh samples (`gtsteer.solvers.heldout`): its
in-sample minus fresh gain (`clean_selection`) is selection on sampling noise, measured
exactly. The same difference for the whole policy replayed by history (`selection`) adds what
a replay blind to the fresh text loses, so it is not selection alone. With few samples an
instruction whose samples happened to score well looks better than it is, so the selection
part should shrink as S grows; the doc says what the numbers show.

Message seeds depend on the chance path's sample indices only (never on S), so the S = 2 tree
is part of the S = 4 tree and
its fresh samples (2, 3) are in it too: a larger S re-uses every smaller one's calls from the
cache. Each instance's record is kept as it finishes (`gtsteer solve --resume`), so an
interrupted run, even in another session without the cache, continues with the instances left;
`--reuse FOLDER` also takes matching records from another run of the same config (a Table 1
run at the config's own S: its `games/` records, kept only where their run key matches). Each
finished S saves its row under --results and a rerun keeps it (same instances and model);
`--render-only` writes the section from the saved rows without a model call. Each config has
its own section of the doc; where one instance set is measured at several S, the reading adds
the paired difference per instance between the first and the last S.

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab samples gtsteer/configs/debate.yaml \
        --seeds 2,4,8 --games 20,20,4 --results results/samples
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

import gtsteer
from gtsteer.binding.shipped import CONFIG_DIR
from gtsteer.domains import load_spec
from gtsteer.runs.output import pyplot, save_png
from gtsteer.runs.ray_pool import RayOptions
from gtsteer.solvers.metrics import MeanCI, mean_ci
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_relative
from lab.studies.table1 import ci, per_instance_values

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab samples"

def section(domain: str) -> str:
    """The doc section (and figure) of one config's study: one per domain, side by side."""
    return f"samples_study_{domain}"


ROW_FILE = "study_row.json"


class StudyRow(BaseModel):
    seeds: int
    games: int
    solved: int
    payoff_span: float
    cfr_gain: MeanCI
    cfr_gain_heldout: MeanCI
    #: Per instance, in-sample minus the history replay's fresh-sample gain: selection on
    #: noise plus what the content-blind replay of later decisions loses.
    selection: MeanCI
    #: The first mover's opening decision (replayed exactly): fresh, in-sample, and in-sample
    #: minus fresh per instance, its selection on sampling noise. None in rows saved before.
    clean: MeanCI | None = None
    clean_in_sample: MeanCI | None = None
    clean_selection: MeanCI | None = None
    #: Every per-instance value behind the intervals (`table1.per_instance_values`).
    instances: list[int] = []
    per_instance: dict[str, list[float]] = {}
    new_calls: int
    wall_s: float
    llm: str
    commit: str
    measured_at: str
    #: `--reuse`: the run whose records were offered, and how many of them this row kept
    #: (their run key matched; their calls are not counted). None in rows saved before.
    reused_from: str | None = None
    reused: int | None = None
    #: The command that measured this row and the machine it ran on (a `--render-only` doc
    #: names both for a row measured elsewhere). None in rows saved before.
    command: str | None = None
    machine: str | None = None


def seeded_config(config: Path, seeds: int, folder: Path) -> Path:
    """The config with `num_llm_seeds: seeds`, written into `folder` (everything else as is)."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["num_llm_seeds"] = seeds
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / config.name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def records_folder(source: Path) -> Path:
    """`--reuse FOLDER`'s records: its `games/` (a solve's folder) or the folder itself."""
    return source / "games" if (source / "games").is_dir() else source


def reuse_records(source: Path, run: Path, games: int) -> int:
    """Copy another run's `games/<i>.json` records of instances 0..games-1 into `run/games/`
    where that instance has none yet; `resume` then keeps those whose run key matches this
    run's (same spec, instance, model, solver and held-out settings) and solves the others
    anew. Returns how many came."""
    records = records_folder(source)
    if not records.is_dir():
        raise FileNotFoundError(f"--reuse {source}: no games/ folder of a solve there")
    target = run / "games"
    target.mkdir(parents=True, exist_ok=True)
    copied = 0
    for path in sorted(records.glob("*.json")):
        if (path.stem.isdigit() and int(path.stem) < games
                and not (target / path.name).exists()):
            shutil.copyfile(path, target / path.name)
            copied += 1
    return copied


def kept_records(source: Path, run: Path) -> int:
    """How many of `run/games/` records are still byte for byte the ones `--reuse` offered
    from `source` (after the solve: a record whose run key did not match was solved anew)."""
    records = records_folder(source)
    return sum(1 for path in (run / "games").glob("*.json")
               if (records / path.name).is_file()
               and (records / path.name).read_bytes() == path.read_bytes())


def measure(config: Path, seeds: int, games: int, llm: str, results: Path,
            progress: bool, ray: RayOptions | None = None,
            reuse: Path | None = None, command: str | None = None) -> StudyRow:
    folder = results / f"s{seeds}"
    commit = benchdoc.commit(["gtsteer"])
    spec = load_spec(config)
    if reuse is not None:
        offered = reuse_records(reuse, folder / "run", games)
        print(f"   {offered} records from {reuse} offered for reuse",
              flush=True)
    t0 = time.perf_counter()
    summary = gtsteer.solve(seeded_config(config, seeds, folder), llm=llm, games=games,
                            out=folder / "run", heldout=True, quiet=not progress, ray=ray,
                            resume=True, report=lambda line: print(line, flush=True))
    wall = time.perf_counter() - t0
    here = benchdoc.machine()
    m = summary.metrics
    if m is None or m.cfr_gain_heldout is None:
        raise RuntimeError(f"S={seeds}: no instance solved with its fresh-sample gain "
                           f"({summary.num_failed} failed); see {folder / 'run'}")
    in_sample = dict(zip(summary.instances, m.cfr_gain.per_instance, strict=True))
    fresh = dict(zip(summary.heldout_instances, m.cfr_gain_heldout.per_instance, strict=True))
    row = StudyRow(
        seeds=seeds, games=games, solved=len(summary.instances),
        payoff_span=spec.payoff.max - spec.payoff.min,
        cfr_gain=mean_ci(list(in_sample.values())),
        cfr_gain_heldout=mean_ci(list(fresh.values())),
        selection=mean_ci([in_sample[i] - fresh[i] for i in fresh]),
        instances=summary.instances, per_instance=per_instance_values(summary, summary.folder),
        new_calls=summary.llm_calls.new_calls, wall_s=round(wall, 1), llm=llm, commit=commit,
        measured_at=here.date, reused_from=None if reuse is None else str(reuse),
        reused=None if reuse is None else kept_records(reuse, folder / "run"),
        command=command, machine=here.described)
    if (hm := summary.heldout_metrics) is not None:
        row.clean = mean_ci(hm.clean.per_instance)
        row.clean_in_sample = mean_ci(hm.clean_in_sample.per_instance)
        row.clean_selection = mean_ci(hm.clean_selection.per_instance)
    (folder / ROW_FILE).write_text(row.model_dump_json(indent=1), encoding="utf-8")
    return row


def read_row(results: Path, seeds: int) -> StudyRow | None:
    path = results / f"s{seeds}" / ROW_FILE
    if not path.is_file():
        return None
    return StudyRow.model_validate_json(path.read_text(encoding="utf-8"))


def saved_row(results: Path, seeds: int, games: int, llm: str) -> StudyRow | None:
    """The row a finished run saved for these settings, if any (a rerun keeps it, with the
    calls and time it really took, instead of measuring the cached tree again)."""
    row = read_row(results, seeds)
    return row if row is not None and (row.games, row.llm) == (games, llm) else None


def saved_rows(results: Path, seeds: list[int]) -> list[StudyRow]:
    return [row for s in seeds if (row := read_row(results, s)) is not None]


def against_zero(m: MeanCI) -> str:
    """Where an interval lies: "holds 0", "is above 0" or "is below 0"."""
    return {1: "is above 0", -1: "is below 0"}.get(m.side or 0, "holds 0")


def disjoint(a: MeanCI, b: MeanCI) -> bool:
    """Whether two intervals are known not to overlap."""
    if None in (a.ci_low, a.ci_high, b.ci_low, b.ci_high):
        return False
    return a.ci_high < b.ci_low or b.ci_high < a.ci_low  # type: ignore[operator]


def reading(rows: list[StudyRow]) -> str:
    """What the rows say, from their intervals alone."""
    if not rows:
        return "No sample count finished yet."
    parts = []
    for r in rows:
        part = (f"at S = {r.seeds} ({r.solved} instances) the history replay's fresh gain"
                f" {against_zero(r.cfr_gain_heldout)} and in-sample minus it"
                f" {against_zero(r.selection)}")
        if r.clean is not None and r.clean_selection is not None:
            part += (f"; the opening decision's fresh gain {against_zero(r.clean)} and its"
                     f" selection {against_zero(r.clean_selection)}")
        parts.append(part)
    text = "; ".join(parts) + "."
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        overlap = not disjoint(first.selection, last.selection)
        text += (f" From S = {first.seeds} to S = {last.seeds} in-sample minus history went from"
                 f" {first.selection.mean:+.3f} to {last.selection.mean:+.3f}; "
                 + ("the two intervals overlap, so these instances do not show it shrink or"
                    " grow." if overlap else "the two intervals do not overlap."))
        for label, diff in paired(first, last).items():
            text += (f" Paired over the {diff.n} instances both measured, S = {last.seeds} minus"
                     f" S = {first.seeds}, {label}: {ci(diff)}, which {against_zero(diff)}.")
    return text


#: The per-instance parts compared between two sample counts: (in-sample key, fresh key).
PAIRED_PARTS = {
    "the opening decision's fresh gain": (None, "heldout_clean"),
    "its selection (in-sample minus fresh)": ("heldout_clean_in_sample", "heldout_clean"),
}


def part_values(r: StudyRow, in_key: str | None, fresh_key: str) -> list[float] | None:
    """One part per instance: the fresh values, or in-sample minus fresh (None if unsaved)."""
    fresh = r.per_instance.get(fresh_key)
    if fresh is None or len(fresh) != len(r.instances):
        return None
    if in_key is None:
        return fresh
    ins = r.per_instance.get(in_key)
    return None if ins is None else [x - y for x, y in zip(ins, fresh, strict=True)]


def paired(a: StudyRow, b: StudyRow) -> dict[str, MeanCI]:
    """Per instance, row `b` minus row `a`, for each part both rows saved on the same instance
    list (empty where the rows measured different instances)."""
    if not a.instances or a.instances != b.instances:
        return {}
    out = {}
    for label, (in_key, fresh_key) in PAIRED_PARTS.items():
        pa, pb = part_values(a, in_key, fresh_key), part_values(b, in_key, fresh_key)
        if pa is not None and pb is not None and len(pa) > 1:
            out[label] = mean_ci([y - x for x, y in zip(pa, pb, strict=True)])
    return out


def figure(rows: list[StudyRow]) -> Any:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6, 3.6))
    xs = [r.seeds for r in rows]
    for offset, label, pick in ((-0.08, "in-sample CFR gain", lambda r: r.cfr_gain),
                                (0.0, "fresh-sample CFR gain", lambda r: r.cfr_gain_heldout),
                                (0.08, "in-sample - fresh (history replay)",
                                 lambda r: r.selection)):
        ms = [pick(r) for r in rows]
        ys = [m.mean for m in ms]
        low = [m.mean - (m.ci_low if m.ci_low is not None else m.mean) for m in ms]
        high = [(m.ci_high if m.ci_high is not None else m.mean) - m.mean for m in ms]
        ax.errorbar([x * (1 + offset) for x in xs], ys, yerr=[low, high], fmt="o-", capsize=3,
                    label=label)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("LLM samples per message (num_llm_seeds)")
    ax.set_ylabel("payoff (mean, 95% interval)")
    ax.legend(fontsize="small")
    return fig


def render(rows: list[StudyRow], config: str, command: str, png: str | None) -> str:
    lines = [
        (f"## Samples study: CFR gain in-sample and on fresh samples by samples per message"
        f" (`{config}`)"),
        "",
        f"Command: `{command}` · {benchdoc.machine_line()}",
        "",
        ("Each row solves the config with `num_llm_seeds` = S (CFR+ 1000 iterations) and"
        " replays the CFR policy on S fresh samples per message (`--heldout`). Intervals are 95%"
        " Student-t over instances. *by history* replays every decision by action history,"
        " blind to the fresh text after the first message, so *in-sample - history* is"
        " selection plus what that blindness loses; *opening* is the first mover's opening"
        " decision alone, replayed exactly, so its in-sample minus fresh is selection on"
        " sampling noise."),
        "",
        ("| S | instances | CFR gain (in-sample) | fresh, by history | in-sample - history |"
         " opening: in-sample | opening: fresh | opening: selection | new LLM calls | wall |"
         " model | commit | measured |"),
        "|---:|---:|---|---|---|---|---|---|---:|---:|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r.seeds} | {r.solved} / {r.games} | {ci(r.cfr_gain)} |"
                     f" {ci(r.cfr_gain_heldout)} | {ci(r.selection)} | {ci(r.clean_in_sample)} |"
                     f" {ci(r.clean)} | {ci(r.clean_selection)} | {r.new_calls} |"
                     f" {r.wall_s:.0f} s | `{r.llm}` | {r.commit} | {r.measured_at} |")
    for r in rows:
        if r.command is not None and r.command != command:
            lines += ["", f"S = {r.seeds} was measured by `{r.command}` on {r.machine}."]
    for r in rows:
        if r.reused_from and r.reused != 0:
            which = "the instance records" if r.reused is None else (
                f"{r.reused} of the {r.solved} instance records")
            lines += ["", f"S = {r.seeds}: {which} came from `{r.reused_from}` where"
                      " their run key matched (the same spec, instances, model and held-out"
                      " settings), so its new calls and wall count only what was solved here."]
    lines += ["", "Reading (from the intervals): " + reading(rows)]
    if png:
        lines += ["", f"![CFR gain by samples per message]({png})"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("config", type=Path, nargs="?", default=CONFIG_DIR / "debate.yaml")
    parser.add_argument("--seeds", default="2,4,8", help="num_llm_seeds values, in order")
    parser.add_argument("--games", default="20",
                        help="instances per S: one number, or one per S (e.g. 20,20,4)")
    parser.add_argument("--llm", default="local")
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "samples_study")
    parser.add_argument("--doc", type=Path, default=benchdoc.DOC)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--render-only", action="store_true",
                        help="no model calls: write the section from the saved rows")
    parser.add_argument("--reuse", type=Path, metavar="FOLDER",
                        help="another solve of this config (e.g. docs/data/table1/<domain>):"
                             " its instance records are kept where their run key matches")
    benchdoc.add_ray_arguments(parser)
    args = parser.parse_args(argv)
    ray = benchdoc.ray_options(parser, args)
    if args.reuse is not None and not args.reuse.is_dir():
        parser.error(f"--reuse {args.reuse}: not a folder")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
        games = [int(g) for g in args.games.split(",")]
    except ValueError:
        parser.error("--seeds and --games take comma-separated integers")
    if len(games) == 1:
        games *= len(seeds)
    if len(games) != len(seeds) or min(seeds) < 1 or min(games) < 2:
        parser.error("--games: one count (>= 2, for an interval) or one per --seeds value;"
                     " --seeds: counts >= 1")
    config = args.config.resolve()
    name = section(load_spec(config).name)  # a broken config fails here, before any model call
    given = sys.argv[1:] if argv is None else argv
    command = "python -m lab samples" + "".join(f" {a}" for a in given)
    shown = repo_relative(config)

    def write(rows: list[StudyRow]) -> str:
        png = None
        if rows:
            png = save_png(figure(rows), args.doc.with_name(f"{name}.png")).name
        start, end = benchdoc.markers(name)
        text = render(rows, shown, command, png)
        benchdoc.write_section(args.doc, start, end, benchdoc.wrap(start, end, text))
        return text

    if not args.render_only:
        for s, n in zip(seeds, games, strict=True):
            if saved_row(args.results, s, n, args.llm) is not None:
                print(f"== num_llm_seeds {s}, {n} instances: saved row kept", flush=True)
                continue
            print(f"== num_llm_seeds {s}, {n} instances", flush=True)
            measure(config, s, n, args.llm, args.results, not args.quiet, ray=ray,
                    reuse=args.reuse, command=command)
            write(saved_rows(args.results, seeds))  # a stopped run keeps the finished rows
    print(write(saved_rows(args.results, seeds)))


if __name__ == "__main__":
    main()
