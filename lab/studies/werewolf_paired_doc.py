"""The section of docs/WEREWOLF_STEERING.md that `python -m lab werewolf-paired` writes from a
`gtsteer werewolf evaluate` run folder (between `<!-- werewolf_paired:start -->` and
`<!-- werewolf_paired:end -->`): the paired games of issue 43, item 3, from the run's
`evaluate.json` alone, with no model call. The driver (`gtsteer.runs.werewolf_evaluate`) plays
and saves into its run folder; the lab writes the doc.

Besides the tables, it says what the measured difference would cost to resolve: the seeds a
t-test would need to exclude 0 at 80% power if the difference and spread held, times the model
time one seed took here (every played condition's game), on this machine and on a Ray cluster,
where a seed is one task (docs/SCALE.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gtsteer.cli.werewolf_steer import signed_span
from gtsteer.evals.paired import PairedDifference
from gtsteer.runs.werewolf_evaluate import PLOT_FILE, EvaluateSummary
from gtsteer.solvers.metrics import Proportion, side_of_zero
from lab.bench import docsection

#: The markers of its section.
MARKERS = docsection.markers("werewolf_paired")
SUMMARY_FILE = "evaluate.json"


class PairedDocError(ValueError):
    """--render-only found no finished evaluate run to render."""


def rate(r: Proportion) -> str:
    return f"{r.correct}/{r.n} = {r.accuracy:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"


def hours(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds < 5400 else f"{seconds / 3600:.1f} hours"


def holds_zero(d: PairedDifference) -> bool:
    """The win-rate difference's interval exists and holds 0."""
    return side_of_zero(d.low, d.high) == 0


def reading(d: PairedDifference) -> str:
    return {None: "no interval (one seed)", 0: "not distinguishable from 0",
            1: "the village wins more often", -1: "the village wins less often"}[
        side_of_zero(d.low, d.high)]


def cost_lines(summary: EvaluateSummary) -> list[str]:
    """What resolving each measured difference would take, from this run's own timings."""
    per_seed = sum(r.model_seconds_per_game for r in summary.results)
    if per_seed <= 0:
        return []
    at_once = summary.workers
    lines = []
    for d in summary.paired:
        if d.seeds_to_exclude_zero is None or not holds_zero(d):
            continue
        need = d.seeds_to_exclude_zero
        total = need * per_seed
        here = (f"{hours(total / at_once)} on this machine, {at_once} seed(s) at a time as "
                "here; " if at_once else "")
        lines.append(
            f"- {d.condition} vs static: about {need} seeds (a t-test at 80% power, if the "
            f"difference {d.village_win_difference:+.2f} and its spread held); at "
            f"{per_seed:.0f} s of model time per seed (its {len(summary.results)} games), "
            f"{here}a Ray cluster plays one seed per task (docs/SCALE.md), so K model workers "
            f"as fast take about {hours(total)} / K.")
    return lines


def render(summary: EvaluateSummary, out: str | Path, plot: str | None = None) -> str:
    """The section, markers included; `plot`: the run's plot, as a link from the doc."""
    cfg = summary.config
    command = summary.command or (f"gtsteer werewolf evaluate --games {cfg.games} "
                                  f"--steer {summary.steer} --out {out}")
    played = ", ".join(r.condition for r in summary.results)
    seeds = f"{cfg.seed}..{cfg.seed + cfg.games - 1}"
    lines = [
        f"Command: `{command}`", "",
        (f"Model `{cfg.llm}`, {cfg.players} players, at most {cfg.max_days} day(s) and "
         f"{cfg.max_messages} discussion message(s) a day, seeds {seeds}, each played "
         f"under every condition ({played}); policy `{summary.steer}`"
         f"{', finished ' + summary.finished if summary.finished else ''}. A game still "
         "running at the day cap has no winner. Win rates with 95% Wilson intervals; the "
         "village's votes on wolves per village-side vote; days survived by the condition's "
         "team (every bot where neither or both are steered); model seconds per game: the "
         "latencies of its calls summed."), "",
        "| condition | village wins [95%] | werewolf wins [95%] | village votes on wolves |"
        " days survived | calls / game | model s / game |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in summary.results:
        lines.append(f"| {r.condition} | {rate(r.village)} | {rate(r.werewolves)} | "
                     f"{r.village_votes_on_wolves:.2f} | {r.mean_days_survived:.2f} | "
                     f"{r.llm_calls_per_game:.1f} | {r.model_seconds_per_game:.0f} |")
    if summary.paired:
        lines += [
            "", "Paired with static, seed by seed (condition minus static): the village's "
            "win-rate difference with its 95% paired bootstrap interval, the discordant seeds "
            "with the exact McNemar p, and the same for the share of village votes that hit a "
            "wolf (seeds where the village voted under both).", "",
            "| condition | seeds | village won only here / only under static | win-rate "
            "difference [95%] | McNemar p | votes on wolves, difference [95%] | reading |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for d in summary.paired:
            lines.append(
                f"| {d.condition} | {d.seeds} | {d.condition_only_wins} / {d.static_only_wins}"
                f" | {signed_span(d.village_win_difference, d.low, d.high)} | "
                f"{d.mcnemar_p:.3f} | "
                f"{signed_span(d.votes_on_wolves_difference, d.votes_low, d.votes_high)} | "
                f"{reading(d)} |")
        cost = cost_lines(summary)
        if cost:
            lines += ["", "What resolving a difference that holds 0 would take:", "", *cost]
    if plot is not None:
        lines += ["", f"![village and werewolf win rates per condition, and the paired "
                      f"differences with static]({plot})"]
    calls = summary.llm_calls
    lines += ["", (f"Every game is in `{SUMMARY_FILE}` and `seeds/<g>.json.gz` of the run's folder "
                   "(`evaluate.png` plots it); `python -m lab werewolf-paired --results <that "
                   "folder> --doc <this doc>` rewrites this section from them. The last "
                   f"run made {calls.requests} model requests ({calls.cache_hits} from the "
                   f"cache, {calls.new_calls} new).")]
    start, end = MARKERS
    return docsection.wrap(start, end, "\n".join(lines))


def write_doc(doc: Path, summary: EvaluateSummary, out: str | Path) -> str:
    """Replace the doc's section (append it when the doc has none); returns the section."""
    png = Path(out) / PLOT_FILE
    plot = (Path(os.path.relpath(png.resolve(), doc.resolve().parent)).as_posix()
            if png.exists() else None)
    section = render(summary, out, plot)
    docsection.write_section(doc, *MARKERS, section)
    return section


def render_only(out: str | Path, doc: Path) -> EvaluateSummary:
    """The section from OUT's `evaluate.json`, no model call."""
    path = Path(out) / SUMMARY_FILE
    try:
        summary = EvaluateSummary.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise PairedDocError(f"--render-only: {out} holds no finished evaluate run ({exc})"
                             ) from None
    write_doc(doc, summary, out)
    return summary
