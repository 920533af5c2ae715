"""The paper's Table 1 for every domain config: NashConv and CFR gain (95% CIs) over N solved
instances, steering accuracy beside them, written to docs/TABLE1.md next to the paper's numbers.

    .venv/bin/python -m lab table1                 # every gtsteer/configs/*.yaml, local model
    .venv/bin/python -m lab table1 --games 20 --steering-samples 10 --llm local \
        gtsteer/configs/trade_fruit_tone.yaml

Each config runs `gtsteer solve` (instances 0..N-1, CFR+ 1000 iterations) and
`gtsteer eval steering` (K = --steering-samples messages per instruction; `--samples`, its
old spelling, still works with a warning); results land in results/table1/. LLM
answers are cached, so an interrupted run resumes where it stopped. Each finished domain saves
its row under --results; `--render-only` writes the doc from those rows without a model call,
so several processes (one per core, on disjoint configs) or sessions can share the work.
`--deals K` solves the rows dealt (a row of its own, saved under DOMAIN-dealsK; give it again
with `--render-only`), with the declared contrasts of docs/TENSION.md (the tension
experiment). `--render-only --also RESULTS:CONFIG:deals=K:games=N` adds such a row from another
results folder after the others (docs/TABLE1.md: the tension row beside docs/data/table1's), as
partial ("n of N instances finished", read back from its instance records) while its run goes
on.

Exit code: 0 when every domain was measured, 1 when any failed (the doc is still written, the
failed row reads `failed: ...`, and stderr names each failed domain), 2 for bad options.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

import gtsteer
from gtsteer.binding import Instance, generate_instances
from gtsteer.binding.shipped import shipped_configs
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains import load_spec
from gtsteer.evals.prompts import DEFINED, PLAIN
from gtsteer.evals.validation import JudgeRefused
from gtsteer.llm import LLM
from gtsteer.runs import eval_steering
from gtsteer.runs.atomic import write_text
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_judge import DEFAULT_LABELLED
from gtsteer.runs.eval_steering import SteeringOptions, SteeringReport
from gtsteer.runs.output import check_out_file, pyplot, save_png
from gtsteer.runs.solve import READERS, InstanceJob, SolveOptions, run_key, summarize
from gtsteer.runs.solve_schema import GameRecord, SolveSummary
from gtsteer.runs.units import RayOptions
from gtsteer.solvers.cfr import DEFAULT_ITERATIONS, DEFAULT_SOLVER
from gtsteer.solvers.metrics import MeanCI, Metric, bootstrap_interval
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_config, repo_relative
from lab.studies.saved import DamagedFileError, read_result
from lab.studies.significance import (
    bootstrap_bound_error,
    holm,
    min_detectable_effect,
    sign_test,
    skewness,
    t_test_p,
)
from lab.studies.table1_decomposition import decomposition

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab table1"

DOC = ROOT / "docs" / "TABLE1.md"
#: The paper's Table 1 (PaLM 2, 200 instances per domain; arXiv 2402.01704), by domain family.
PAPER = {
    "fruit": ("fruit trading (tone)", 0.009, 0.038),
    "meeting": ("meeting scheduling (day)", 0.010, 0.037),
    "debate": ("debate (argument style)", 0.024, 0.106),
}


def family(domain: str) -> str | None:
    """The paper's Table 1 row a config compares with. Its meeting domain is steered by the
    proposed day, so the meeting-by-tone config has no row (PSRO is where the paper uses tones
    there)."""
    for key, words in (("fruit", ("fruit",)), ("meeting", ("meeting_dow",)),
                       ("debate", ("debate",))):
        if any(w in domain for w in words):
            return key
    return None


class VersusCell(BaseModel):
    """One player's fresh-sample gain of the policy over a baseline, paired per instance, with
    its Student-t (`gain`) and bootstrap intervals."""

    player: int
    role: str
    replay: str  # "opening" (exact) or a text-reading replay
    baseline: str
    others: str = "any"  # the other players: on `any`, or the first mover on its policy
    gain: MeanCI
    bootstrap: tuple[float, float] | None = None
    #: Kept in rows saved before issue 57 (post-hoc power from the observed mean: no longer
    #: computed or shown; the page shows the minimum detectable effect instead).
    instances_needed: int | None = None


class Row(BaseModel):
    config: str
    domain: str
    games: int
    solved: int = 0
    #: The config's payoff range (max - min), which every normalised value divides by.
    payoff_span: float = Field(1.0, gt=0)
    #: S: the config's `num_llm_seeds` when measured (one count, or one per depth); None in
    #: rows saved before they kept it (the page then reads the config's).
    samples_per_message: int | list[int] | None = None
    #: The domain code's `version` when measured (a payoff rule changed; None: saved before
    #: rows kept it, i.e. version 1).
    domain_version: int | None = None
    #: `--deals K`: solved dealt (a root chance node over K private-information draws, as
    #: `gtsteer solve --deals`); None: as the config says. Rows of other deal counts are other
    #: rows (their own folder, never reused for one another).
    deals: int | None = None
    nash_conv: MeanCI | None = None
    #: The summary's `*_normalized` numbers (`solvers.metrics.normalized`: by the config's
    #: payoff range; NashConv also by the players). Rows saved before summary schema 7
    #: divided NashConv by the range only (in docs/data all below 1e-5, shown as 0.000).
    nash_conv_normalized: MeanCI | None = None
    cfr_gain: MeanCI | None = None
    cfr_gain_normalized: MeanCI | None = None
    #: `--heldout`: CFR gain of the same policies on fresh samples of the solved positions.
    cfr_gain_heldout: MeanCI | None = None
    cfr_gain_heldout_normalized: MeanCI | None = None
    #: Share of the held-out gain's replayed decisions that had no solved position (`any`).
    heldout_unmatched_share: float | None = None
    #: The clean estimate: the first mover's opening decision on fresh samples (replayed
    #: exactly), its in-sample counterpart, and the replays that read the fresh text.
    heldout_clean: MeanCI | None = None
    heldout_clean_in_sample: MeanCI | None = None
    heldout_readers: dict[str, MeanCI] = {}
    #: The policy's fresh-sample value against `any`, greedy and uniform (paired).
    versus: list[VersusCell] = []
    #: Per solved instance (in `instances` order; held-out values in `heldout_instances`
    #: order): every value a mean or interval above is computed from, per player too.
    instances: list[int] = []
    heldout_instances: list[int] = []
    per_instance: dict[str, list[float]] = {}
    steering_plain: float | None = None
    steering_defined: float | None = None
    steering_chance: float | None = None
    #: Lower ends of the 95% Wilson intervals of the two aggregates.
    steering_low: list[float] = []
    steering_samples: int = 0
    #: The judge that classified the messages, validated first on the labelled messages.
    steering_judge: str | None = None
    #: Why steering was not measured: no variant of the judge passed its labelled messages.
    steering_refused: str | None = None
    error: str | None = None
    #: Read back from the records of a run that has not finished (`partial_row`): `solved` of
    #: `games` instances so far. Never saved (a saved row is a finished run's).
    partial: bool = Field(False, exclude=True)


class StoredRow(BaseModel):
    llm: str
    row: Row
    #: How the row was measured (absent in rows saved before they kept it).
    command: str | None = None
    commit: str | None = None
    measured_at: str | None = None


ROW_FILE = "table1_row.json"


def row_name(domain: str, deals: int | None = None) -> str:
    """A row's folder under --results: the domain, `-deals<K>` added for a dealt row."""
    return domain if deals is None else f"{domain}-deals{deals}"


def row_path(results: Path, domain: str) -> Path:
    return results / domain / ROW_FILE


def stored_row(results: Path, domain: str, llm: str, games: int | None, samples: int | None,
               heldout: bool = False, deals: int | None = None) -> StoredRow | None:
    """The row a finished run saved for these settings (with the held-out gain where
    `heldout` asks for it, solved with `deals`), if any; `games` None takes the row at
    whatever instance count it was measured, `samples` None at whatever steering K (each row
    shows its own n and K). A row file that cannot be read raises `DamagedFileError`."""
    path = row_path(results, row_name(domain, deals))
    if not path.is_file():
        return None
    saved = read_result(path, StoredRow)
    if saved.llm != llm or (samples is not None and saved.row.steering_samples != samples) or (
            games is not None and saved.row.games != games) or saved.row.deals != deals:
        return None
    if heldout and saved.row.heldout_clean is None:  # none, or measured before the clean part
        return None
    return saved


def row_keys(spec: DomainSpec, instance: Instance, config: Path, model: str) -> set[str]:
    """The run keys `gtsteer solve` gives this instance's record in a Table 1 run of `model`
    (the client's model name; seed 0, the default solver and iterations, with or without
    `--heldout`): a record made under another spec (another `num_llm_seeds` or deal count),
    model or domain version has another key and is not this row's."""
    return {run_key(InstanceJob(spec, instance, str(config), 0, DEFAULT_SOLVER,
                                DEFAULT_ITERATIONS, heldout, progress=False,
                                readers=READERS if heldout else ()), model)
            for heldout in (False, True)}


def row_records(results: Path, config: Path, llm: str, games: int | None,
                deals: int | None) -> list[GameRecord]:
    """The records a row of `config` on `llm` is read from: solved records of this config's
    instances 0..games-1 (any index when `games` is None), dealt `deals` times (None:
    undealt) under this model's run keys. A record still being written is not counted."""
    spec = load_spec(config)
    dealt = spec if deals is None else spec.with_deals(deals)
    model = LLM(llm).model
    found = []
    for path in (results / row_name(spec.name, deals) / "games").glob("*.json"):
        try:
            found.append(GameRecord.model_validate_json(path.read_bytes()))
        except (OSError, ValueError):  # not finished, or cut while written: not counted
            continue
    ours = generate_instances(spec, games or 1 + max((r.index for r in found), default=-1), 0)
    return sorted((r for r in found
                   if r.status == "solved" and len(r.deals) == (deals or 0)
                   and r.index < len(ours) and Instance.model_validate(r.instance) == ours[r.index]
                   and r.run_key in row_keys(dealt, ours[r.index], config, model)),
                  key=lambda r: r.index)


def partial_row(results: Path, config: Path, llm: str, games: int, deals: int
                ) -> StoredRow | None:
    """A dealt row whose run has not finished (no row saved yet), read back without a model
    call from the records of the instances it has solved so far (`games/<i>.json`, each
    committed as it finishes, `row_records`). None when there is none."""
    spec = load_spec(config)
    dealt = spec.with_deals(deals)
    folder = results / row_name(spec.name, deals)
    records = row_records(results, config, llm, games, deals)
    if not records:
        return None
    options = SolveOptions(games=games, deals=deals,
                           heldout=any(r.heldout is not None for r in records))
    summary = summarize(str(config), dealt, options, games, llm, {}, records)
    row = Row(config=repo_relative(config), domain=spec.name, games=games,
              payoff_span=spec.payoff.span, samples_per_message=spec.num_llm_seeds,
              domain_version=spec.hooks.version, deals=deals, partial=True)
    fill_solved(row, summary, spec, folder)
    return StoredRow(llm=llm, row=row)


def without_instances(metric: Metric) -> MeanCI:
    return MeanCI(**metric.model_dump(exclude={"per_instance"}))


def measure(config: Path, llm: str, games: int, samples: int, out: Path, progress: bool,
            heldout: bool = False, command: str | None = None,
            ray: RayOptions | None = None, judge: str | None = "embed",
            deals: int | None = None) -> StoredRow:
    """Solve and steer one domain; a finished row is saved under `out` (in `row_name`'s
    folder) with how it was made: `command` (the options, without configs) followed by this
    row's config. `ray` solves the instances as Ray tasks (docs/SCALE.md); `deals` dealt.
    `judge` classifies the steering messages (a judge spelling or model string; None: the
    writer's own likelihoods) and is validated on the labelled messages first: a judge at
    chance there is not used, and the row says why."""
    spec = load_spec(config)
    commit = benchdoc.commit(["gtsteer"])  # the code measured, read before it runs
    row = Row(config=repo_relative(config),
              domain=spec.name, games=games, payoff_span=spec.payoff.span,
              samples_per_message=spec.num_llm_seeds, domain_version=spec.hooks.version,
              deals=deals)
    command = None if command is None else f"{command} {row.config}"
    folder = out / row_name(spec.name, deals)
    try:
        summary = gtsteer.solve(config, llm=llm, games=games, out=folder, deals=deals,
                                heldout=heldout, quiet=not progress, ray=ray, resume=True,
                                report=lambda line: print(line, flush=True))
        fill_solved(row, summary, spec, summary.folder)
        if samples > 0:
            row.steering_samples = samples
            try:
                report: SteeringReport = eval_steering.measure(
                    config, RunContext.of(llm=llm, reader=judge, progress=progress),
                    SteeringOptions(samples=samples, validate_classifier_on=DEFAULT_LABELLED))
            except JudgeRefused as exc:  # the solve's numbers stand; the cell says why
                row.steering_refused = str(exc)
            else:
                plain, defined = report.run(PLAIN), report.run(DEFINED)
                row.steering_judge = report.classifier_model
                row.steering_plain = plain.aggregate.accuracy if plain else None
                row.steering_defined = defined.aggregate.accuracy if defined else None
                row.steering_chance = next((r.chance for r in (plain, defined) if r), None)
                row.steering_low = [r.aggregate.ci_low for r in (plain, defined)
                                    if r is not None]
    except Exception as exc:  # noqa: BLE001 - one failing domain must not hide the others
        row.error = f"{type(exc).__name__}: {exc}"
    stored = StoredRow(llm=llm, row=row, command=command, commit=commit, measured_at=utc_now())
    if row.error is None:  # a finished domain: `--render-only` and later runs can show it
        write_text(folder / ROW_FILE, stored.model_dump_json(indent=1))  # whole or none
    return stored


def fill_solved(row: Row, summary: SolveSummary, spec: DomainSpec, folder: Path) -> None:
    """`row`'s solved part from a solve's summary and its run `folder` (a finished run's, or
    one read back from the records of a run still going: `partial_row`)."""
    if summary.metrics is not None:
        m = summary.metrics
        row.solved = len(summary.instances)
        # The summary's numbers, normalised as it defines them (`metrics.normalized`).
        row.nash_conv, row.nash_conv_normalized, row.cfr_gain, row.cfr_gain_normalized = (
            without_instances(m.nash_conv), without_instances(m.nash_conv_normalized),
            without_instances(m.cfr_gain), without_instances(m.cfr_gain_normalized))
        row.instances, row.per_instance = summary.instances, per_instance_values(summary, folder)
        if m.cfr_gain_heldout is not None:
            row.cfr_gain_heldout = without_instances(m.cfr_gain_heldout)
            if m.cfr_gain_heldout_normalized is not None:
                row.cfr_gain_heldout_normalized = without_instances(
                    m.cfr_gain_heldout_normalized)
            row.heldout_unmatched_share = (summary.heldout_unmatched
                                           / max(1, summary.heldout_decisions))
            row.heldout_instances = summary.heldout_instances
        if (hm := summary.heldout_metrics) is not None:
            row.heldout_clean = without_instances(hm.clean)
            row.heldout_clean_in_sample = without_instances(hm.clean_in_sample)
            row.heldout_readers = {name: without_instances(r.cfr_gain)
                                   for name, r in hm.replays.items() if name != "history"}
            row.versus = [
                VersusCell(player=v.player, role=spec.players[v.player], replay=v.replay,
                           baseline=v.baseline, others=v.others,
                           gain=without_instances(v.gain),
                           bootstrap=bootstrap_interval(v.gain.per_instance))
                for v in hm.versus]


def per_instance_values(summary: SolveSummary, folder: Path) -> dict[str, list[float]]:
    """Every per-instance value of a solve, flat, so any interval can be recomputed from the
    saved row: in-sample metrics and per-player gains (from games/<i>.json), the held-out
    gain of each replay in total and per player, and the clean estimate."""
    m = summary.metrics
    assert m is not None
    out = {"nash_conv": m.nash_conv.per_instance, "cfr_gain": m.cfr_gain.per_instance}
    records = [GameRecord.model_validate_json(
        (folder / "games" / f"{i}.json").read_text(encoding="utf-8"))
        for i in summary.instances]
    players = len(records[0].values.cfr_gain_per_player) if records[0].values else 0
    for p in range(players):
        out[f"cfr_gain_player{p}"] = [r.values.cfr_gain_per_player[p] for r in records
                                      if r.values is not None]
    if (hm := summary.heldout_metrics) is not None:
        out["heldout_clean"] = hm.clean.per_instance
        out["heldout_clean_in_sample"] = hm.clean_in_sample.per_instance
        for name, replay in hm.replays.items():
            out[f"heldout_{name}"] = replay.cfr_gain.per_instance
            for p, metric in enumerate(replay.per_player):
                out[f"heldout_{name}_player{p}"] = metric.per_instance
        for v in hm.versus:
            cell = f"versus_player{v.player}_{v.replay}_{v.baseline}_others_{v.others}"
            out[cell] = v.gain.per_instance
            out[f"{cell}_policy_value"] = v.policy_value.per_instance
            out[f"{cell}_baseline_value"] = v.baseline_value.per_instance
    return out


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def provenance(stored: list[StoredRow]) -> list[str]:
    """One line per row: the command and commit that measured it."""
    heading = ("How each row was measured (`--render-only` redraws this page from the saved"
               " rows), each command as it ran, the lab's command under today's name: older"
               " rows give the steering sample count as `--samples` (today"
               " `--steering-samples`) and configs under `configs/` (today `gtsteer/configs/`),"
               " and the oldest ran `python scripts/table1.py`:")
    lines = ["", heading, ""]
    for s in stored:
        how = (f"`{benchdoc.renamed(s.command, 'gtsteer table1', COMMAND)}` at commit"
               f" {s.commit or 'unknown'},"
               f" {s.measured_at}"
               if s.command else "not recorded (saved before rows kept their command)")
        if s.row.partial:
            how = (f"partial, read back from the records of the {s.row.solved} of"
                   f" {s.row.games} instances its run has finished (the run saves its command"
                   " with the row when it finishes)")
        lines.append(f"- `{s.row.domain}`: {how}")
    return lines


def signed(x: float, digits: int = 3) -> str:
    return f"{round(x, digits) + 0.0:+.{digits}f}"  # + 0.0: never print -0.000


def ci(m: MeanCI | None) -> str:
    if m is None:
        return "—"
    if m.ci_low is None or m.ci_high is None:
        return f"{signed(m.mean)} (n={m.n})"
    return f"{signed(m.mean)} [{signed(m.ci_low)}, {signed(m.ci_high)}]"


def scaled(m: MeanCI | None, factor: float) -> MeanCI | None:
    """`m` with its mean and interval multiplied by `factor` > 0 (e.g. 1 / payoff range)."""
    if m is None:
        return None
    return MeanCI(mean=m.mean * factor, n=m.n,
                  ci_low=None if m.ci_low is None else m.ci_low * factor,
                  ci_high=None if m.ci_high is None else m.ci_high * factor)


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def steering_cell(r: Row) -> str:
    """Accuracy without / with definitions / chance, and the judge; or why it is missing."""
    if not r.steering_samples:
        return "—"
    if r.steering_refused is not None:
        return f"not measured: no validated judge (K={r.steering_samples})"
    judge = f", judge `{r.steering_judge}`" if r.steering_judge else ""
    return (f"{pct(r.steering_plain)} / {pct(r.steering_defined)} / {pct(r.steering_chance)}"
            f" (K={r.steering_samples}{judge})")


def steerable(rows: list[Row]) -> str:
    """Which domains the model follows (an aggregate's 95% interval above chance), and where
    no judge could tell."""
    follows: list[str] = []
    ignores: list[str] = []
    unjudged = [f"`{r.domain}`" for r in rows if r.steering_refused is not None]
    for r in rows:
        if not r.steering_low or r.steering_chance is None:
            continue
        (follows if max(r.steering_low) > r.steering_chance else ignores).append(f"`{r.domain}`")
    text = (f"above chance (95% interval excludes it): {', '.join(follows) or 'none'}; "
            f"not distinguishable from chance: {', '.join(ignores) or 'none'}")
    if unjudged:
        text += ("; not measured, no judge passed the labelled messages (docs/EVAL.md): "
                 + ", ".join(unjudged))
    return text


def gain_without_steering(rows: list[Row]) -> list[str]:
    """Domains whose CFR gain interval excludes 0 while steering is indistinguishable from
    chance."""
    return [f"`{r.domain}`" for r in rows
            if r.cfr_gain is not None and r.cfr_gain.side == 1
            and r.steering_low and r.steering_chance is not None
            and max(r.steering_low) <= r.steering_chance]


def heldout_cell(r: Row) -> str:
    """The fresh-sample gain by history replay, with the share of decisions that could only
    play `any`."""
    cell = ci(r.cfr_gain_heldout)
    if r.cfr_gain_heldout is not None and r.cfr_gain_heldout.n < r.solved:
        cell += f" (n={r.cfr_gain_heldout.n}: some held-out trees failed)"
    if r.heldout_unmatched_share:
        cell += f" ({pct(r.heldout_unmatched_share)} of decisions unmatched)"
    return cell


def clean_cell(r: Row) -> str:
    """The clean estimate (first mover's opening decision on fresh samples), in-sample beside."""
    if r.heldout_clean is None:
        return "—"
    return f"{ci(r.heldout_clean)} (in-sample {ci(r.heldout_clean_in_sample)})"


def readers_cell(r: Row) -> str:
    """The fresh-sample gain of each replay that reads the fresh text."""
    return "; ".join(f"{name} {ci(m)}" for name, m in r.heldout_readers.items()) or "—"


def against_zero(m: MeanCI) -> str:
    return {1: "above 0", -1: "below 0"}.get(m.side or 0, "not distinguishable from 0")


def heldout_summary(rows: list[Row]) -> str:
    """What the fresh-sample columns say, domain by domain, from the intervals alone."""
    held = [r for r in rows if r.heldout_clean is not None]
    if not held:
        older = [f"`{r.domain}`" for r in rows if r.cfr_gain_heldout is not None]
        return "Held out so far: none." + (
            f" The fresh-sample column of {', '.join(older)} predates the clean estimate: it"
            " replays every decision by action history, blind to the fresh text after the"
            " first message, with one seed per sample index along a path (science review"
            " 66ff82a), so it says little." if older else "")
    groups: dict[str, list[str]] = {}
    for r in held:
        assert r.heldout_clean is not None
        groups.setdefault(against_zero(r.heldout_clean), []).append(f"`{r.domain}`")
    parts = [f"{k}: {', '.join(v)}" for k, v in groups.items()]
    text = ("On fresh samples the clean estimate (the first mover's opening decision) is "
            + "; ".join(parts) + ".")
    fallback = [f"`{r.domain}` ({pct(r.heldout_unmatched_share)})" for r in held
                if r.heldout_unmatched_share]
    if fallback:
        text += (" Where a fresh dialogue reaches a position the solved tree never had (its"
                 " dialogue ended earlier, and no other sample of the same instructions went"
                 " on), the history replay can only play `any`, which pulls its gain toward 0: "
                 + ", ".join(fallback) + " of the replayed decisions.")
    return text


def solved_cell(r: Row) -> str:
    if r.partial:
        return f"{r.solved} of {r.games} instances finished (partial)"
    return f"{r.solved} / {r.games}"


def partial_note(rows: list[Row]) -> list[str]:
    """One sentence naming the rows whose run has not finished."""
    partial = [f"`{r.domain}` ({r.solved} of {r.games} instances finished)"
               for r in rows if r.partial]
    if not partial:
        return []
    return ["", ("Partial rows, their run still going or stopped: " + ", ".join(partial)
                 + ". Each is read back from the records of its finished instances (committed"
                 " as they finish), so its values and intervals are over those instances only"
                 " and will change as the rest finish.")]


def older_payoff(rows: list[Row]) -> list[str]:
    """One sentence naming the rows measured under an older version of their domain's code
    than the config loads now (issue 57 changed the meeting payoff: version 2)."""
    old = []
    for r in rows:
        try:
            now = load_spec(repo_config(r.config)).hooks.version
        except Exception:  # noqa: BLE001 - a config gone since: nothing to compare with
            continue
        was = r.domain_version or 1
        if was < now:
            old.append(f"`{r.domain}` (version {was}; now {now})")
    if not old:
        return []
    return ["", ("Measured under an older version of the domain's payoff than the code now has,"
                 " and not re-run: " + ", ".join(old) + ". For the meeting domain that predates"
                 " issue 57's away-day rule (a meeting on a day either player is away now pays"
                 " both 0), so its values pay meetings one side cannot attend.")]


def samples_cell(r: Row) -> str:
    """S, the samples per message the row was solved with (a per-depth list as such); a row
    saved before it kept S shows its config's count."""
    seeds = r.samples_per_message
    if seeds is None:
        try:
            seeds = load_spec(repo_config(r.config)).num_llm_seeds
        except Exception:  # noqa: BLE001 - a config gone since: the page says it does not know
            return "?"
    cell = f"[{', '.join(map(str, seeds))}]" if isinstance(seeds, list) else str(seeds)
    return cell if r.deals is None else f"{cell}, dealt {r.deals}"


def cell_key(c: VersusCell) -> str:
    """The saved row's per-instance key of a cell's paired differences."""
    return f"versus_player{c.player}_{c.replay}_{c.baseline}_others_{c.others}"


def is_primary(c: VersusCell) -> bool:
    """The declared primary contrast of a domain: the first mover's clean fresh gain (its
    opening decision, replayed exactly, the other player on `any`) over greedy, the
    instruction a person would give without a solver."""
    return c.replay == "opening" and c.baseline == "greedy" and c.others == "any"


#: The continuations of a dealt row's declared contrasts (docs/TENSION.md: the responder's
#: text-reading replay and the reading greedy); another reader's (`distilled`) is exploratory.
CONTINUATIONS = ("nearest", "greedy")


def is_continued(c: VersusCell) -> bool:
    """A dealt row's declared primary contrast (docs/TENSION.md): the first mover's opening
    against greedy's, every later decision on a `CONTINUATIONS` entry."""
    return c.replay == "opening" and c.baseline == "greedy" and c.others in CONTINUATIONS


#: |skewness| from which a mean is shown with its sign counts and exact sign test.
SKEWED = 1.0
#: A paired difference within this share of the payoff range counts as a tie (no sign).
TIE_SHARE = 1e-3


def bound(x: float, mc_error: float | None) -> str:
    """A bootstrap bound; "≈ 0" where it lies within 2 Monte Carlo SDs of 0 (its side of 0
    would be decided by the resample seed)."""
    if mc_error is not None and abs(x) < 2 * mc_error:
        return "≈ 0"
    return signed(x)


def p_text(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def mde_text(values: list[float]) -> str:
    """The minimum detectable effect at this n (80% power, two-sided 5%, observed SD)."""
    import numpy as np

    if len(values) < 2:
        return "—"
    mde = min_detectable_effect(float(np.std(values, ddof=1)), len(values))
    return "—" if mde is None else f"{mde:.3f}"


def signs_text(values: list[float], span: float) -> str:
    """Sign counts and the exact sign test, where the values are skewed."""
    skew = skewness(values)
    if skew is None or abs(skew) < SKEWED:
        return "—"
    return f"{sign_counts(values, span)} (skew {skew:+.1f})"


def sign_counts(values: list[float], span: float) -> str:
    """Positive / negative / tied differences and the exact sign test's p."""
    s = sign_test(values, tie=TIE_SHARE * span)
    return f"{s.positive}+ / {s.negative}− / {s.ties} tied, sign p {p_text(s.p)}"


def versus_section(rows: list[Row]) -> list[str]:
    """Per domain: the declared primary contrast (Student-t), then every other fresh-sample
    cell as exploratory, its t p Holm-adjusted over all of them, with the bootstrap, the
    minimum detectable effect and, where skewed, the sign test (review science-0832c41, M4,
    L1, L2)."""
    shown = [r for r in rows if r.versus]
    if not shown:
        return []
    primary: list[tuple[Row, VersusCell]] = []
    exploratory: list[tuple[Row, VersusCell]] = []
    for r in shown:
        declared = any(is_continued(c) for c in r.versus)  # a dealt row declares its own
        for c in r.versus:
            if not is_continued(c):
                (primary if is_primary(c) and not declared else exploratory).append((r, c))
    values = {(r.domain, r.deals, cell_key(c)): r.per_instance.get(cell_key(c), [])
              for r, c in primary + exploratory}  # a dealt and an undealt row of one domain
    pvals = [t_test_p(values[r.domain, r.deals, cell_key(c)]) for r, c in exploratory]
    adjusted = holm([1.0 if p is None else p for p in pvals])
    lines = [
        "",
        "## Fresh samples: the policy against baselines",
        "",
        ("Each value is a player's value with the CFR policy minus its value with the baseline,"
         " on the same fresh samples of each instance (a paired difference), mean over"
         " instances with a 95% Student-t interval, the one interval method of this page. The"
         " first mover plays its opening decision (replayed exactly: the clean estimate), the"
         " other player on `any`. The responder's policy is replayed by one that reads the"
         " fresh text, with the first mover on `any` (*others* `any`) or on its solved opening"
         " (*others* `policy`). *greedy*: the instruction a person would give each player"
         " without a solver (meeting: its own highest-valued day it is not away on; offers: the"
         " offer worth most to it that its basket can pay for); *uniform*: every instruction"
         " equally often. *S*: samples per message the tree was solved with (a per-depth list"
         " as such). *MDE*: the minimum detectable effect at this n, the smallest true mean a"
         " two-sided 5% t-test finds with 80% power given the observed SD (a design quantity,"
         " not post-hoc power). Per-instance values:"
         " `versus_player<P>_<replay>_<baseline>_others_<others>` in each domain's row under"
         " docs/data/table1/."),
    ]
    if primary:
        lines += [
            "",
            "### Primary contrast (declared): the proposer's clean fresh gain over greedy",
            "",
            ("One contrast per domain, declared before reading the cells: does the solver's"
             " opening beat the instruction a person would give? Unadjusted Student-t p."),
            "",
            ("| domain | S | n | player | policy − greedy [95% t] | t p | MDE"
             " | signs (where skewed) |"),
            "|---|---|---:|---|---|---:|---:|---|",
        ]
    for r, c in primary:
        vals = values[r.domain, r.deals, cell_key(c)]
        lines.append(f"| `{r.domain}` | {samples_cell(r)} | {c.gain.n} | {c.role} |"
                     f" {ci(c.gain)} | {p_text(t_test_p(vals))} | {mde_text(vals)} |"
                     f" {signs_text(vals, r.payoff_span)} |")
    lines += continued_section(shown)
    lines += [
        "",
        f"### Exploratory cells (Holm-adjusted over all {len(exploratory)})",
        "",
        ("Every other cell: its t p adjusted by Holm's method over the"
         f" {len(exploratory)} cells of this table (family-wise 5%; **bold** below 0.05). The"
         " fruit cells are heavily skewed (many zeros, a few large values), where both the t"
         " and the bootstrap interval reject a true null far more often than 5% (review"
         f" science-0832c41, M4): where |skew| ≥ {SKEWED:g} the cell adds its sign counts and"
         " the exact sign test (a difference within 0.1% of the payoff range is a tie). The"
         " bootstrap (BCa, 10,000 resamples of the instances) is a robustness check, not a"
         " second test; a bound within 2 Monte Carlo SDs of 0 (over 10 other resample seeds)"
         " reads ≈ 0, since its sign is the seed's. Responder rows against greedy are"
         " reader-sensitive: in rows measured before meeting's domain version 3, greedy"
         " counter-proposes its own best day whatever it was offered, and the small reader"
         " misreads counter-proposals as agreements (45% in `python -m lab reward`), which"
         " pays greedy (review M1; not counted per terminal here: that needs the trees"
         " expanded again). From version 3 the responder's greedy reads the proposal: it"
         " names the day it was offered when that day is free and within 2 of its own best"
         " free day, else its best free day."),
        "",
        ("| domain | S | n | player | policy | others | baseline | mean [95% t] | Holm p"
         " | bootstrap [95% BCa] | MDE | signs (where skewed) |"),
        "|---|---|---:|---|---|---|---|---|---:|---|---:|---|",
    ]
    for (r, c), raw, p in zip(exploratory, pvals, adjusted, strict=True):
        vals = values[r.domain, r.deals, cell_key(c)]
        holm_p = "—" if raw is None else f"**{p_text(p)}**" if p < 0.05 else p_text(p)
        boot = "—"
        if c.bootstrap is not None:
            err = bootstrap_bound_error(vals) if len(vals) >= 2 else None
            low_err, high_err = err if err is not None else (None, None)
            boot = f"[{bound(c.bootstrap[0], low_err)}, {bound(c.bootstrap[1], high_err)}]"
        baseline = "`any`" if c.baseline == "any" else c.baseline
        lines.append(f"| `{r.domain}` | {samples_cell(r)} | {c.gain.n} | {c.role} | {c.replay}"
                     f" | `{c.others}` | {baseline} | {ci(c.gain)} | {holm_p} | {boot} |"
                     f" {mde_text(vals)} | {signs_text(vals, r.payoff_span)} |")
    return lines


def continued_section(rows: list[Row]) -> list[str]:
    """Dealt rows: the declared primary contrast per continuation, Student-t, sign counts with
    the exact sign test, Holm over the row's continuations (docs/TENSION.md, section 2)."""
    lines = []
    for r in rows:
        cells = [c for c in r.versus if is_continued(c)]
        vals = [r.per_instance.get(cell_key(c), []) for c in cells]
        raw = [t_test_p(v) for v in vals]
        adjusted = holm([1.0 if p is None else p for p in raw])
        for c, v, p, adj in zip(cells, vals, raw, adjusted, strict=True):
            n = f"{c.gain.n} of {r.games} finished" if r.partial else str(c.gain.n)
            lines.append(f"| `{r.domain}` | {samples_cell(r)} | {n} | {c.role} |"
                         f" `{c.others}` | {ci(c.gain)} | {p_text(p)} |"
                         f" {'—' if p is None else p_text(adj)} |"
                         f" {sign_counts(v, r.payoff_span) if v else '—'} | {mde_text(v)} |")
    if not lines:
        return []
    return [
        "",
        "### Primary contrast of a dealt row (declared): the opening against greedy's",
        "",
        ("docs/TENSION.md's contrast, declared before the run. In a dealt game (`--deals K`: the"
         " solver cannot tell the responder's notes apart) the first mover's fresh value with"
         " its solved opening (replayed exactly) minus with greedy's opening, on the same fresh"
         " samples, every later decision of both players on the *continuation*: `nearest`, the"
         " solved policy replayed from the fresh text by its nearest solved information state,"
         " or `greedy`, the reading greedy (the responder accepts a free day within 2 of its"
         " best free day, else counters; the proposer takes a counter it can attend). Student-t"
         " 95% interval over instances, the exact sign test beside it (a difference within 0.1%"
         " of the payoff range is a tie), Holm over the row's continuations; the row's other"
         " cells are exploratory below. Per-instance values:"
         " `versus_player<P>_opening_greedy_others_<continuation>`."),
        "",
        ("| domain | S | n | player | continuation | policy − greedy [95% t] | t p | Holm p"
         " | signs, exact sign test | MDE |"),
        "|---|---|---:|---|---|---|---:|---:|---|---:|",
        *lines,
    ]


def decomposition_section(rows: list[Row]) -> list[str]:
    """Per domain: the first mover's fresh value under `any`, a random instruction, the CFR
    opening and greedy, and each step (`lab.studies.table1_decomposition`)."""
    lines: list[str] = []
    for r in rows:
        first = next((c.player for c in r.versus if c.replay == "opening"), None)
        if first is None:
            continue
        n_actions = len(load_spec(repo_config(r.config)).instructions())
        d = decomposition(r.per_instance, first, n_actions)
        if d is None:
            continue
        role = next(c.role for c in r.versus if c.player == first)
        values = " → ".join(f"{k} {signed(v.mean)}" for k, v in d.values.items())
        steps = "; ".join(f"{k} {ci(v)}" for k, v in d.steps.items())
        lines.append(f"| `{r.domain}` | {d.values['any'].n} | {role} | {values} | {steps} |")
    if not lines:
        return []
    return [
        "",
        "## Fresh samples: what the opening's gain over `any` is made of",
        "",
        ("The first mover's mean fresh value with its opening on `any`, on a *random*"
         " instruction (uniform over the non-`any` ones: (n·uniform − any)/(n − 1) from the"
         " saved `uniform` and `any` values, exact because a value is linear in the opening"
         " mixture), on the CFR opening (*policy*) and on *greedy*, with each paired step and"
         " its 95% Student-t interval: *random − any* is what naming some instruction is worth,"
         " *policy − random* what the solver's choice adds. The steps are descriptive (not"
         " adjusted); *policy − greedy* is the primary contrast above."),
        "",
        "| domain | n | player | value: any → random → policy → greedy | steps |",
        "|---|---:|---|---|---|",
        *lines,
    ]


def gain_figure(rows: list[Row]) -> Any:
    """Per domain: CFR gain / payoff range with its 95% interval, in-sample and on fresh
    samples side by side (normalised, so domains with different payoffs share one axis)."""
    plt = pyplot()

    shown = [r for r in rows if r.cfr_gain_normalized is not None]
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(shown) + 1.4))
    for offset, label, pick in ((-0.2, "in-sample (the samples CFR chose from)",
                                 lambda r: r.cfr_gain_normalized),
                                (0.0, "fresh: clean (opening decision, exact replay)",
                                 lambda r: scaled(r.heldout_clean, 1 / r.payoff_span)),
                                (0.2, "fresh: nearest-information-state replay",
                                 lambda r: scaled(r.heldout_readers.get("nearest"),
                                                  1 / r.payoff_span))):
        ys, xs, lows, highs = [], [], [], []
        for y, r in enumerate(shown):
            m = pick(r)
            if m is None:
                continue
            ys.append(y + offset)
            xs.append(m.mean)
            lows.append(m.mean - (m.ci_low if m.ci_low is not None else m.mean))
            highs.append((m.ci_high if m.ci_high is not None else m.mean) - m.mean)
        ax.errorbar(xs, ys, xerr=[lows, highs], fmt="o", capsize=3, label=label)
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(shown)), [r.domain for r in shown])
    ax.invert_yaxis()
    ax.set_xlabel("CFR gain / payoff range (mean, 95% interval over instances)")
    ax.legend(loc="lower right", fontsize="small")
    return fig


def render(rows: list[Row], llm: str, command: str,
           pending: list[tuple[str, int]] | None = None, figure: str | None = None,
           stored: list[StoredRow] | None = None, damaged: list[str] | None = None) -> str:
    """The page; `damaged` are domains whose saved row could not be read (not shown)."""
    now = utc_now()
    lines = [
        "# Table 1: NashConv and CFR gain on the solved samples, and the gain on fresh ones",
        "",
        ("The paper's Table 1 (arXiv 2402.01704) reports, per domain, NashConv of the CFR policy"
        " (how much a player gains by deviating from it) and CFR gain (what one player gains by"
        " switching from the unguided `any` to the CFR policy while the other stays unguided)."
        " This page measures both with gtsteer, with 95% Student-t intervals over instances,"
        " and puts steering accuracy beside them: CFR can only exploit instructions the model"
        " actually follows. Both are in-sample: computed on the very tree CFR solved, S LLM"
        " samples per message. NashConv there is about 0 by construction once CFR+ has"
        " converged on that small tree; it says the solver finished, not that the policy is"
        " hard to exploit on new samples. What carries to samples the solver never saw is in"
        " the *fresh* columns and the sections below them."),
        "",
        f"Written by `{command}` · model `{llm}` · {now} · commit {benchdoc.commit()}.",
        "",
        ("| domain | S | solved / instances | NashConv, in-sample (solver converged)"
        " | NashConv / (players × range), in-sample | CFR gain, in-sample"
        " | CFR gain / range, in-sample"
        " | fresh: clean (opening decision) | fresh: text-reading replays | fresh: by history"
        " (blind) | steering (no defs / defs / chance) |"),
        "|---|---|---:|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.error is not None and r.nash_conv is None:
            lines.append(f"| `{r.domain}` | {samples_cell(r)} | {r.solved} / {r.games} |"
                         f" failed: {r.error} | | | | | | | |")
            continue
        lines.append(
            f"| `{r.domain}` | {samples_cell(r)} | {solved_cell(r)} | {ci(r.nash_conv)} |"
            f" {ci(r.nash_conv_normalized)} | {ci(r.cfr_gain)} | {ci(r.cfr_gain_normalized)} |"
            f" {clean_cell(r)} | {readers_cell(r)} | {heldout_cell(r)} | {steering_cell(r)} |"
        )
    lines += partial_note(rows)
    lines += older_payoff(rows)
    lines += versus_section(rows)
    lines += decomposition_section(rows)
    if stored:
        lines += provenance(stored)
    if figure:
        lines += ["", f"![CFR gain in-sample and on fresh samples, per domain]({figure})"]
    if pending:
        lines += ["", "Not measured yet (the run was stopped before them, or is still going): "
                  + ", ".join(f"`{name}` ({solved} instance{'' if solved == 1 else 's'}"
                              " solved so far)" for name, solved in pending) + "."]
    if damaged:
        lines += ["", "Saved rows that could not be read (not shown; the command names each"
                  " file and why, and measuring the domain again replaces it): "
                  + ", ".join(f"`{name}`" for name in damaged) + "."]
    lines += [
        "",
        "## The paper's numbers (PaLM 2, 200 instances, no intervals reported)",
        "",
        "| domain | NashConv | CFR gain | gtsteer configs |",
        "|---|---:|---:|---|",
    ]
    for key, (name, nash, gain) in PAPER.items():
        mine = ", ".join(f"`{r.domain}`" for r in rows if family(r.domain) == key) or "—"
        lines.append(f"| {name} | {nash:.3f} | {gain:+.3f} | {mine} |")
    lines += [
        "",
        ("The paper does not say whether its values are normalised by the payoff range; both"
        " are shown here. Domains without a paper row (meeting by tone, the verdict games)"
        " are gtsteer's own."),
        "",
        "## What a 270M / 135M model can and cannot show",
        "",
        ("- It **can** show the machinery end to end and reproducibly: every tree is expanded,"
        " solved and measured, a rerun makes no new model call, and NashConv near 0 says CFR+"
        " converged on the game *this* model induces."),
        "- A CFR gain is only as meaningful as the steering accuracy next to it. Where accuracy"
        " sits at chance, the instructions barely change the messages, every instruction leads"
        " to about the same payoffs, and a gain near 0 is the honest result, not a solver"
        " failure. Where accuracy is well above chance, the instructions change what is said"
        " and CFR has something to choose between. In this run: " + steerable(rows) + ".",
        ("- CFR gain is measured on the very samples CFR optimised over, as in the paper: with"
        " few samples per message, an instruction whose samples happened to score well looks"
        " better than it is, so part of a gain is selection on sampling noise. A positive gain"
        " where steering sits at chance is the sign of it (in this run: "
        + (", ".join(gain_without_steering(rows)) or "none") + "); the instructions may still"
        " change something the classifier does not see. The fresh-sample columns (`--heldout`,"
        " `gtsteer solve --heldout`, docs/SOLVE.md) build each instance again with LLM samples"
        " CFR never saw. Only the first mover's opening decision is the same position there, so"
        " only it is replayed exactly: *clean* is that decision's gain on fresh samples (its"
        " later decisions and the other players on `any`), the clean estimate, with its"
        " in-sample value beside it (their difference is its selection on sampling noise)."
        " Every later decision reads a message sampled anew: *by history* replays the policy"
        " solved for the solved message with the same sample index, blind to the fresh text,"
        " so its shortfall is not selection alone; *text-reading replays* play the policy of"
        " the nearest solved information state (`nearest`, MiniLM embeddings) or a distilled"
        " MLP (`distilled`) on the fresh text, mean over players. " + heldout_summary(rows)),
        ("- It **cannot** reproduce the paper's effect sizes: the paper used PaLM 2 for both"
        " dialogue and reward, 200 instances and longer dialogues. A tiny model's reward"
        " extraction also makes errors (see `gtsteer eval reward`), so a measured gain mixes"
        " strategy with reward-model noise; the intervals say how much of it survives N"
        " instances, not whether the reward model is right."),
        ("- Verdict games and debate are judged by the same small model; their numbers describe"
        " the judge as much as the players. The verdict games have one sample per message and a"
        " temperature-0 judge, so each instance is a deterministic game: NashConv 0 comes"
        " trivially, and an in-sample gain there is selection among the single samples each"
        " instruction drew. The fresh-sample column is the one that speaks to strategy. In the"
        " interrogation and Turing test each instance deals both hidden types (a uniform"
        " prior); the fresh-sample replay mixes the questioner's policies over them, since only"
        " the solved samples' words told it which one it faced."),
        ("- Steering accuracy is measured on the first message of a dialogue, i.e. the first"
        " speaker's instructions (the prosecutor's or interrogator's in the verdict games), and"
        " classified by a judge that passed the hand-labelled messages first"
        " (gtsteer/data/judge_labelled.yaml, docs/EVAL.md); where none passed, it is not"
        " measured."),
        ("- How the selection part changes with more samples per message: the samples study"
        " (`python -m lab samples`, docs/BENCHMARKS.md \"Samples study\"). Earlier runs:"
        " [TABLE1_2026-12-01.md](TABLE1_2026-12-01.md), all seven domains before chat models"
        " answered as the speaker, with unvalidated likelihood judges."),
        "",
    ]
    return "\n".join(lines)


class Also(NamedTuple):
    """`--also RESULTS:CONFIG:deals=K:games=N`: a dealt row of another results folder."""

    results: Path
    config: Path
    deals: int
    games: int


def also_row(text: str) -> Also:
    """Parse `--also`; a one-line error naming what is wrong."""
    results, _, tail = text.partition(":")
    config, _, tail = tail.partition(":")
    given = dict(part.partition("=")[::2] for part in tail.split(":"))
    try:
        deals, games = int(given.pop("deals")), int(given.pop("games"))
    except (KeyError, ValueError):
        deals = games = 0
    if not results or not config or given or deals < 1 or games < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give RESULTS:CONFIG:deals=K:games=N (K, N >= 1)")
    if not Path(config).is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: no config file {config}")
    return Also(Path(results), Path(config).resolve(), deals, games)


def also_stored(also: Also, llm: str) -> StoredRow | None:
    """An `--also` row: the finished run's saved row, else (no row saved yet) the partial
    row of the instances its run has finished, else None. A saved row of other settings
    (another model, instance count or deal count) is not shown, nor are its records."""
    domain = load_spec(also.config).name
    if row_path(also.results, row_name(domain, also.deals)).is_file():
        return stored_row(also.results, domain, llm, also.games, None, deals=also.deals)
    return partial_row(also.results, also.config, llm, also.games, also.deals)


#: The exit code of a run in which a domain failed (as `gtsteer solve` when no instance solved).
DOMAIN_FAILED = 1


def main(argv: list[str] | None = None) -> int:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path, help="default: every shipped config")
    parser.add_argument("--llm", default="local")
    parser.add_argument("--games", type=int,
                        help="instances per domain (default 20; with --render-only and no"
                             " --games, each domain's saved row at its own instance count)")
    parser.add_argument("--steering-samples", type=int, dest="samples",
                        help="steering messages per instruction, K (default 10; 0: skip"
                             " steering; with --render-only and none given, each domain's saved"
                             " row at its own K). Not S, the samples per message, which the"
                             " config's num_llm_seeds sets")
    parser.add_argument("--samples", type=int, dest="old_samples", help=argparse.SUPPRESS)
    parser.add_argument("--judge", default="embed",
                        help="what classifies the steering messages: a judge (embed,"
                             " pairwise:MODEL, parse) or a model's likelihoods (a model string);"
                             " validated on gtsteer/data/judge_labelled.yaml first, and not used"
                             " where it is at chance there")
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "table1")
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--heldout", action="store_true",
                        help="also measure CFR gain on fresh LLM samples (part of a second "
                             "tree per instance)")
    parser.add_argument("--deals", type=int, metavar="K",
                        help="solve each instance dealt, as `gtsteer solve --deals K`: a root"
                             " chance node over K private-information draws (a row of its own,"
                             " saved under DOMAIN-dealsK; give it again with --render-only)")
    parser.add_argument("--also", type=also_row, action="append", default=[],
                        metavar="RESULTS:CONFIG:deals=K:games=N",
                        help="with --render-only: also show CONFIG's row dealt K times from the"
                             " results folder RESULTS (repeatable), after the others: its saved"
                             " row, or while its run of N instances goes on, the instances"
                             " finished so far, marked partial")
    parser.add_argument("--render-only", action="store_true",
                        help="no model calls: write the doc from the rows finished runs saved "
                             "under --results (several processes or sessions can share the work)")
    benchdoc.add_ray_arguments(parser)
    args = parser.parse_args(argv)
    if args.old_samples is not None:  # the old spelling: recorded command lines still run
        if args.samples is not None:
            parser.error("give --steering-samples only (--samples is its deprecated spelling)")
        print(f"{COMMAND}: warning: --samples is deprecated: it is the steering K, messages per"
              " instruction; use --steering-samples", file=sys.stderr, flush=True)
        args.samples = args.old_samples
    if not args.render_only:
        args.games = 20 if args.games is None else args.games
        args.samples = 10 if args.samples is None else args.samples
    if (args.games is not None and args.games < 1) or (
            args.samples is not None and args.samples < 0) or (
            args.deals is not None and args.deals < 1):
        parser.error("--games and --deals must be >= 1 and --steering-samples >= 0")
    if args.also and not args.render_only:
        parser.error("--also is for --render-only (it shows rows other runs measure)")
    ray = benchdoc.ray_options(parser, args)
    configs = [c.resolve() for c in args.configs] or list(shipped_configs().values())
    given = sys.argv[1:] if argv is None else argv
    command = "python -m lab table1" + "".join(f" {a}" for a in given)
    # One domain's command: the options without the config list (a row names its own config).
    config_args = set(args.configs)
    command_base = "python -m lab table1" + "".join(
        f" {a}" for a in given if Path(a) not in config_args)
    check_out_file(args.doc, "--doc")  # before any work: a folder there is refused now
    domains = [load_spec(c).name for c in configs]
    # Each row by the name the page gives it (its folder under its results), and where it is
    # read from: the domains, then the --also rows (an --also row of a domain's name wins).
    names = [row_name(d, args.deals) for d in domains]
    also = {row_name(load_spec(a.config).name, a.deals): a for a in args.also}
    sources = {name: (args.results, c, args.games, args.deals)
               for name, c in zip(names, configs, strict=True)}
    sources |= {name: (a.results, a.config, a.games, a.deals) for name, a in also.items()}
    damaged: list[str] = []

    def write_doc(rows: dict[str, StoredRow]) -> str:
        pending = [(name, len(row_records(results, config, args.llm, games, deals)))
                   for name, (results, config, games, deals) in sources.items()
                   if name not in rows and name not in damaged]
        stored = [rows[name] for name in sources if name in rows]
        shown = [s.row for s in stored]
        figure = None
        if any(r.cfr_gain_normalized is not None for r in shown):
            figure = save_png(gain_figure(shown), args.doc.with_name(f"{args.doc.stem}_gain.png"))
        text = render(shown, args.llm, command, pending, figure.name if figure else None,
                      stored, damaged)
        write_text(args.doc, text)  # atomically: a kill leaves the old page or the new one
        return text

    rows: dict[str, StoredRow] = {}
    if args.render_only:
        for domain, name in zip(domains, names, strict=True):
            try:
                row = stored_row(args.results, domain, args.llm, args.games, args.samples,
                                 args.heldout, args.deals)
            except DamagedFileError as exc:  # one damaged row must not hide the others
                print(f"{COMMAND}: skipped `{name}`: {exc}", file=sys.stderr, flush=True)
                damaged.append(name)
                continue
            if row is not None:
                rows[name] = row
        for name, a in also.items():
            try:
                row = also_stored(a, args.llm)
            except DamagedFileError as exc:
                print(f"{COMMAND}: skipped `{name}`: {exc}", file=sys.stderr, flush=True)
                damaged.append(name)
                continue
            if row is not None:
                rows[name] = row
        print(write_doc(rows))
        return 0
    with ExitStack() as session:
        if ray is not None:  # one Ray session for every domain
            from gtsteer.runs.ray_pool import connected

            session.enter_context(connected(ray))
        for config, name in zip(configs, names, strict=True):
            print(f"== {config.name}", flush=True)
            rows[name] = measure(config, args.llm, args.games, args.samples, args.results,
                                 not args.quiet, args.heldout, command=command_base, ray=ray,
                                 judge=args.judge, deals=args.deals)
            if rows[name].row.error:
                print(f"   failed: {rows[name].row.error}", flush=True)
            # Written after every domain: a run stopped part-way still leaves the finished rows.
            text = write_doc(rows)
    print(text)
    failed = [f"{domain} ({' '.join(stored.row.error.split())})"  # one line
              for domain, stored in rows.items() if stored.row.error]
    if failed:
        print(f"error: {len(failed)} of {len(rows)} domains failed: " + "; ".join(failed),
              file=sys.stderr, flush=True)
        return DOMAIN_FAILED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
