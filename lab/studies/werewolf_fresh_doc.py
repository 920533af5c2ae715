"""The section of docs/WEREWOLF_STEERING.md that `python -m lab werewolf-heldout --doc` writes
(between `<!-- werewolf_fresh:start -->` and `<!-- werewolf_fresh:end -->`), from the rows a
run saved: every number and interval is recomputed from `rows/<i>.json`, so the lab's
`werewolf-fresh` rewrites it without a model call. A study's page, as `table1`'s: the driver
(`lab.studies.werewolf_heldout`) measures and saves, this module writes the doc."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gtsteer.solvers.metrics import MeanCI
from gtsteer.werewolf.playstyles import UNSTEERED
from lab.bench import benchdoc, docsection
from lab.studies.werewolf_heldout import (
    SUMMARY_FILE,
    FreshStateRow,
    SteerHeldoutSummary,
    read_rows,
)
from lab.studies.werewolf_heldout_stats import BASELINES, GainStat, find_stat, gain_stats

#: The markers of its section.
MARKERS = docsection.markers("werewolf_fresh")
LABELS = {"cfr": "CFR policy", "distilled": "distilled policy (MLP)"}


#: A run saved while the study was a product command recorded `gtsteer werewolf steer-heldout`;
#: the section quotes the spelling that runs today (`benchdoc.renamed`).
RETIRED = "gtsteer werewolf steer-heldout"
COMMAND = "python -m lab werewolf-heldout"


def signed(x: float) -> str:
    return f"{round(x, 3) + 0.0:+.3f}"  # + 0.0: never print -0.000


def t_cell(m: MeanCI) -> str:
    if m.ci_low is None or m.ci_high is None:
        return f"{signed(m.mean)} (n={m.n})"
    return f"{signed(m.mean)} [{signed(m.ci_low)}, {signed(m.ci_high)}]"


def boot_cell(s: GainStat | None) -> str:
    if s is None or s.bootstrap is None:
        return "—"
    return f"[{signed(s.bootstrap[0])}, {signed(s.bootstrap[1])}]"


def verdict(m: MeanCI) -> str:
    return {None: "no interval (one state)", 1: "above 0", -1: "below 0"}.get(
        m.side, "not distinguishable from 0")


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def seeds_text(seeds: Sequence[int]) -> str:
    return f"{min(seeds)}..{max(seeds)}" if seeds else "none"


def measured_cost(rows: Sequence[FreshStateRow]) -> str:
    """What the rows cost, whichever runs measured them (a resumed run counts only its own
    calls): each row's model requests and seconds, summed."""
    requests = sum(r.solved.message_calls + r.solved.prediction_calls + r.fresh_message_calls
                   + r.fresh_prediction_calls for r in rows)
    seconds = sum(r.seconds for r in rows)
    return (f"The {len(rows)} rows took {requests} model requests (both trees, cached or not) "
            f"and {duration(seconds)}, their own counts and seconds summed.")


def render(summary: SteerHeldoutSummary, rows: Sequence[FreshStateRow]) -> str:
    """The section, markers included, from `rows` (the settings and command from `summary`)."""
    stats = gain_stats(rows)
    cfg, train = summary.config, summary.train
    games = sorted({r.game_id for r in rows})
    head = [
        (f"`{benchdoc.renamed(summary.command or RETIRED, RETIRED, COMMAND)}` (model `{cfg.llm}`"
         f"{', finished ' + summary.finished if summary.finished else ''}). "
         f"{len(rows)} held-out discussion states from {len(games)} bot-only games dealt "
         f"from seeds {seeds_text(summary.heldout_seeds)} (the policy's `steer-train` run "
         f"played seeds {seeds_text(summary.train_seeds)}; at most {cfg.per_game} states a "
         f"game), {train.players} players, {train.max_speakers} speakers, "
         f"{train.num_llm_seeds} sample(s) per message, CFR+ {train.iterations} iterations. "
         "Each cell: the first speaker's value with the policy at its opening decision minus "
         "its value with the baseline, every later speaker `unsteered`, paired per state (one "
         "tree for both), mean over states with the 95% Student-t interval; the 95% bootstrap "
         "interval (BCa, 10,000 resamples of the states) beside it. *Fresh*: a tree built "
         "with message samples the solver never drew (the opening view is the solved one "
         "word for word, so the CFR policy is replayed exactly); *in-sample*: the solved "
         "tree. Payoffs are in [-1, 1] (P(a wolf is eliminated) - P(a village-side player "
         "is), for the first speaker's team)."),
        "",
        "| first speaker plays | samples | vs `unsteered` (t) | bootstrap | vs uniform (t) |"
        " bootstrap |",
        "|---|---|---|---|---|---|",
    ]
    lines = head + _gain_rows(stats)
    values = {name: find_stat(stats, name, UNSTEERED) for name in LABELS}
    uni = find_stat(stats, "cfr", "uniform")
    if values["cfr"] is not None and values["distilled"] is not None and uni is not None:
        lines += ["", (f"Mean first-speaker values on fresh samples: CFR policy "
                       f"{signed(values['cfr'].policy_value)}, distilled "
                       f"{signed(values['distilled'].policy_value)}, `unsteered` "
                       f"{signed(values['cfr'].baseline_value)}, uniform "
                       f"{signed(uni.baseline_value)}.")]
    reading = []
    for policy in LABELS:
        for baseline in BASELINES:
            s = find_stat(stats, policy, baseline)
            if s is not None:
                name = f"`{baseline}`" if baseline == UNSTEERED else baseline
                reading.append(f"{LABELS[policy]} vs {name}: {verdict(s.gain)}")
    if reading:
        lines += ["", "On fresh samples: " + "; ".join(reading) + "."]
    lines += _by_team(stats)
    needs = [f"{LABELS[s.policy]} vs {s.baseline}: about {s.states_needed}"
             for s in stats if s.samples == "fresh" and s.team == "all"
             and s.gain.side == 0 and s.states_needed]
    if needs:
        lines += ["", ("Where a fresh-sample interval holds 0, the states a t-test would need "
                       "to exclude it with 80% power if the mean and spread stayed as "
                       "measured: " + "; ".join(needs) + ".")]
    if summary.shortfall:
        lines += ["", f"Note: {summary.shortfall}."]
    calls = summary.model_calls
    lines += ["", ("Per-state rows (every style's value on both trees, both policies' "
                   "distributions): `rows/<i>.json` in the run's folder; `python -m lab "
                   "werewolf-fresh --results <that folder>` rewrites this section "
                   f"from them. {measured_cost(rows)} The last run made {calls.requests} model "
                   f"requests ({calls.cache_hits} from the cache, {calls.new_calls} new) in "
                   f"{duration(summary.seconds)}.")]
    start, end = MARKERS
    return docsection.wrap(start, end, "\n".join(lines))


def _gain_rows(stats: Sequence[GainStat]) -> list[str]:
    """The table's rows: each policy against `unsteered` and uniform, fresh then in-sample."""
    rows = []
    for samples in ("fresh", "in-sample"):
        for policy in LABELS:
            a = find_stat(stats, policy, UNSTEERED, samples)
            b = find_stat(stats, policy, "uniform", samples)
            if a is None or b is None:
                continue
            rows.append(f"| {LABELS[policy]} | {samples} | {t_cell(a.gain)} | {boot_cell(a)} |"
                        f" {t_cell(b.gain)} | {boot_cell(b)} |")
    return rows


def _by_team(stats: Sequence[GainStat]) -> list[str]:
    """The paragraph of gains by the first speaker's team (none when no team was measured)."""
    teams = [t for t in ("village", "werewolves") if find_stat(stats, "cfr", UNSTEERED,
                                                              team=t)]
    if not teams:
        return []
    parts = []
    for team in teams:
        cells = [f"{LABELS[p]} vs `{UNSTEERED}` {t_cell(s.gain)}" for p in LABELS
                 if (s := find_stat(stats, p, UNSTEERED, team=team)) is not None]
        n = find_stat(stats, "cfr", UNSTEERED, team=team)
        parts.append(f"{team} first (n={n.gain.n if n else 0}): " + ", ".join(cells))
    return ["", "By the first speaker's team (fresh samples, t intervals): "
            + "; ".join(parts) + "."]


def write_doc(doc: Path, summary: SteerHeldoutSummary, rows: Sequence[FreshStateRow]) -> str:
    """Replace the doc's section (append it when the doc has none); returns the section."""
    section = render(summary, rows)
    docsection.write_section(doc, *MARKERS, section)
    return section


def render_only(out: str | Path, doc: Path) -> str:
    """The section from a finished run's folder (no model call)."""
    path = Path(out) / SUMMARY_FILE
    if not path.is_file():
        raise FileNotFoundError(f"--render-only: {out} holds no {SUMMARY_FILE} (run the "
                                "measurement to the end first; --resume continues it)")
    summary = SteerHeldoutSummary.model_validate_json(path.read_text())
    rows = read_rows(out, summary.run_key)
    if not rows:
        raise FileNotFoundError(f"--render-only: {out}/rows holds no row of its summary's run")
    return write_doc(doc, summary, rows)
