"""The PSRO discovery study (issues 40 and 57): does PSRO find the days?

gtsteer/configs/schedule_meeting_dow_start.yaml is meeting by day where each player starts from
one day (Monday) and `any`. `gtsteer psro` has to grow the other days from what a proposer model
names, with a prompt that shows it the scenario and the population. The full game,
gtsteer/configs/schedule_meeting_dow.yaml, has every day as an action and is the reference
(`--reference`). Each iteration's meta-strategy is played in it, instance by instance
(`gtsteer.solvers.psro.reference`): its NashConv there, its gain over `any`, and that gain on
fresh samples (`--heldout`). The bar is the full game's best constant mixture (one instruction
per player for every instance, as a meta-strategy is), in-sample and on fresh samples; the goal
(issue 57) is a fresh gain of 80% of its fresh gain. The held-out gate (`--heldout-gate`)
adopts a proposal only when it also beats its baseline on fresh samples.

Each row is one proposer with the shotgun oracle (the default): the embedded default model and
Qwen2.5-Coder 0.5B. The writer (and reward reader) is the same for every row. Every row plays
one instances file, the full config's seeded instances (`gtsteer instances CONFIG --seeded -n
N`), so all rows and the reference share every message sample through the response cache.
Each finished row saves `summary.json` (the `gtsteer psro` summary) and `study_row.json` (its
settings, calls and time) under --results/<row>/, and a rerun keeps it. `--render-only` writes
the marked section of docs/PSRO.md from the saved summaries, with no model call. Every number
in the section is read from those files.

    flock /tmp/gtsteer-model.lock .venv/bin/python -m lab psro-discovery --games 10
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gtsteer.binding import generate_instances
from gtsteer.binding.llm_instances import instances_jsonl
from gtsteer.domains import load_spec
from gtsteer.llm import LLM
from gtsteer.runs.atomic import write_text
from gtsteer.runs.context import RunContext
from gtsteer.runs.output import IN_PROGRESS, check_out_file
from gtsteer.runs.psro import SCHEMA_VERSION, PSROOptions, PSROSummary
from gtsteer.runs.psro import run as run_psro
from gtsteer.runs.units import RayOptions
from gtsteer.solvers.metrics import MeanCI, mean_ci
from gtsteer.solvers.psro import META_SOLVERS, IterationReport, PSROConfig
from gtsteer.solvers.psro.oracles import OracleResult
from gtsteer.solvers.psro.reference import ConstantReference, ReferenceReport
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT, repo_config, repo_relative
from lab.studies.samples_study import against_zero
from lab.studies.saved import DamagedFileError, read_result
from lab.studies.table1 import ci, pct, signed

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab psro-discovery"

SECTION = "psro_discovery"
DOC = ROOT / "docs" / "PSRO.md"
START_CONFIG = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow_start.yaml"
FULL_CONFIG = ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"
#: Committed with the repository (results/ is not): small JSON and one PNG per row.
RESULTS = ROOT / "docs" / "data" / "psro_discovery_fair"
ROW_FILE = "study_row.json"
SUMMARY = "summary.json"
#: Issue 57's goal: the meta-strategy's fresh-sample gain over `any` reaches this share of
#: the fresh gain of the full game's best constant mixture.
GOAL = 0.8
#: Issues 40 and 57 ask for at least this many instances (fewer run, and the section says so).
MIN_GAMES = 10


@dataclass(frozen=True)
class Row:
    """One row of the study: who proposes, with which oracle."""

    name: str
    proposer: str
    operator: str
    about: str


ROWS = {r.name: r for r in (
    Row("embedded-shotgun", "local", "shotgun", "the embedded default model"),
    Row("qwen0.5b-shotgun", "local:qwen2.5-coder-0.5b", "shotgun", "Qwen2.5-Coder 0.5B Instruct"),
)}


class RowSettings(BaseModel):
    """Everything that decides a row's numbers (a saved row is kept only when they match)."""

    model_config = ConfigDict(frozen=True)

    row: str
    writer: str
    proposer: str
    operator: str
    games: int
    iterations: int
    candidates: int
    meta_solver: str
    seed: int
    #: Paths as the docs show them (relative to the repository where they lie in it).
    config: str
    reference: str
    instances: str


class StudyRow(BaseModel):
    """A finished row: its settings and what the run cost (its numbers are in summary.json)."""

    settings: RowSettings
    new_calls: int
    requests: int
    proposer_new_calls: int
    wall_s: float
    commit: str
    measured_at: str


#: (role, model string) -> what the run context gets for that role: the string itself, or a
#: client (tests hand in doubles with known payoffs).
Clients = Callable[[str, str], str | LLM]


def shown(path: Path) -> str:
    """`path` as the docs show it: relative to the repository when it lies in it."""
    return repo_relative(path.resolve())


def instances_file(results: Path, full: Path, games: int, seed: int = 0) -> Path:
    """The full config's seeded instances 0..games-1 as JSONL (what `gtsteer instances FULL
    --seeded -n games` writes), written once under `results` and checked on every later use."""
    path = results / f"instances-{games}.jsonl"
    text = instances_jsonl(generate_instances(load_spec(full), games, seed))
    if path.is_file():
        if path.read_text(encoding="utf-8") != text:
            raise ValueError(f"{path}: not the seeded instances of {shown(full)} (seed {seed});"
                             " move it away and run again")
        return path
    write_text(path, text)
    return path


def read_row(folder: Path) -> StudyRow | None:
    """The folder's study_row.json, None when there is none (`DamagedFileError` when it
    cannot be read)."""
    path = folder / ROW_FILE
    if not path.is_file():
        return None
    return read_result(path, StudyRow)


def read_summary(folder: Path) -> PSROSummary | None:
    """The folder's finished summary.json, None when there is none or the run was stopped
    (`DamagedFileError` when it cannot be read, holds no iteration, or was written by a newer
    schema than this code reads)."""
    path = folder / SUMMARY
    if not path.is_file() or (folder / IN_PROGRESS).exists():
        return None
    summary = read_result(path, PSROSummary)
    if summary.schema_version > SCHEMA_VERSION:
        raise DamagedFileError(f"{path}: written with schema version {summary.schema_version},"
                               f" newer than this gtsteer reads ({SCHEMA_VERSION})")
    if not summary.iterations:
        raise DamagedFileError(f"{path}: holds no iteration")
    return summary


def saved_row(results: Path, settings: RowSettings) -> StudyRow | None:
    """The row a finished run saved for exactly these settings, if any (a damaged one is
    named and measured again)."""
    folder = results / settings.row
    try:
        row = read_row(folder)
        if row is None or row.settings != settings or read_summary(folder) is None:
            return None
    except DamagedFileError as exc:
        print(f"   {exc}: measured again", flush=True)
        return None
    return row


def saved_rows(results: Path, names: Sequence[str]
               ) -> tuple[list[tuple[StudyRow, PSROSummary]], dict[str, str]]:
    """Every finished row among `names` (in that order) with its summary, and the rows that
    could not be read or drawn, each with why (the file and the problem)."""
    out, damaged = [], {}
    for name in names:
        folder = results / name
        try:
            row, summary = read_row(folder), read_summary(folder)
            if row is None or summary is None:
                continue
            render_row(row, summary, str(results))  # a row that cannot be drawn is damaged
        except DamagedFileError as exc:
            damaged[name] = str(exc)
            continue
        except (LookupError, ValueError, ArithmeticError, TypeError) as exc:
            damaged[name] = f"{folder}: cannot be drawn ({type(exc).__name__}: {exc})"
            continue
        out.append((row, summary))
    return out, damaged


def path_arg(path: Path) -> str:
    """A path for the run: relative when it lies under the working directory (so the summary
    records no machine's folder), else absolute."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def measure(settings: RowSettings, start: Path, full: Path, instances: Path, results: Path,
            clients: Clients, ray: RayOptions | None = None) -> StudyRow:
    """Run one row's `gtsteer psro` into results/<row>/ and save its study_row.json."""
    folder = results / settings.row
    (folder / ROW_FILE).unlink(missing_ok=True)  # a killed run leaves no stale row behind
    commit = benchdoc.commit(["gtsteer"])

    def step(report: IterationReport) -> None:
        added = ", ".join(a or (f"rejected {r!r}" if r else "—") for a, r in
                          zip(report.added, report.rejected or [None] * len(report.added),
                              strict=True)) or "final meta-game"
        print(f"   iteration {report.iteration}: {added} ({report.llm.new_calls} new calls,"
              f" {report.wall_s:.0f} s)", flush=True)

    ctx = RunContext.of(llm=clients("writer", settings.writer),
                        proposer=clients("proposer", settings.proposer), out=folder, ray=ray,
                        progress=False, report=lambda text: print(f"   {text}", flush=True),
                        on_phase=lambda text: print(f"   .. {text}", flush=True), on_step=step)
    psro = PSROConfig(iterations=settings.iterations, candidates=settings.candidates,
                      operator=settings.operator, meta_solver=settings.meta_solver,
                      seed=settings.seed, heldout=True, heldout_gate=True)
    t0 = time.perf_counter()
    summary = run_psro(path_arg(start), ctx, PSROOptions(
        settings=psro, instances_file=path_arg(instances), reference=path_arg(full)))
    wall = time.perf_counter() - t0
    # summary.json holds every iteration's report: the per-iteration copies are not kept
    shutil.rmtree(folder / "iterations", ignore_errors=True)
    proposer_calls = sum(it.llm.proposer_new_calls for it in summary.iterations)
    row = StudyRow(settings=settings, new_calls=summary.llm_calls.new_calls,
                   requests=summary.llm_calls.requests, proposer_new_calls=proposer_calls,
                   wall_s=round(wall, 1), commit=commit, measured_at=benchdoc.machine().date)
    write_text(folder / ROW_FILE, row.model_dump_json(indent=1) + "\n")  # whole or none
    return row


# ---- rendering ----------------------------------------------------------------------------


def cell_text(text: str, limit: int = 60) -> str:
    """A model's text made safe for one markdown table cell or list item."""
    flat = " ".join(str(text).split()).replace("|", "\\|").replace("`", "'")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def interval_of(ref: ReferenceReport | ConstantReference, field: str) -> MeanCI | None:
    """Mean and 95% t interval over instances of one `per_instance` field (None if missing)."""
    values = [getattr(p, field) for p in ref.per_instance]
    if not values or any(v is None for v in values):
        return None
    return mean_ci(values)


def share_cell(gain: MeanCI | None, bar: float | None) -> str:
    """`gain` as a share of a reference's mean gain `bar`; the interval is the gain's interval
    over that fixed mean (the reference's own spread is not in it)."""
    if gain is None or bar is None or bar <= 0:
        return "—"
    text = pct(gain.mean / bar)
    if gain.ci_low is not None and gain.ci_high is not None:
        text += f" [{pct(gain.ci_low / bar)}, {pct(gain.ci_high / bar)}]"
    return text


def added_cell(it: IterationReport, players: Sequence[str]) -> str:
    if not it.added:
        return "(final meta-game)"
    rejected = it.rejected or [None] * len(it.added)
    parts = []
    for name, added, rej in zip(players, it.added, rejected, strict=True):
        what = f"`{added}`" if added else (f"— (gate rejected `{rej}`)" if rej else "—")
        parts.append(f"{name}: {what}")
    return "; ".join(parts)


def heldout_cell(it: IterationReport, players: Sequence[str]) -> str:
    """Each adopted (or gate-rejected) proposal on fresh samples beside its baseline."""
    parts = []
    for o in it.oracles:
        h = o.heldout
        label = o.added or o.rejected
        if h is None or label is None:
            continue
        base = f"`{h.baseline_instruction}`" if h.baseline_instruction else "the meta-strategy"
        if h.candidate is None or h.baseline is None:
            fresh = f"not scored ({cell_text(h.error or '', 40)})"
        else:
            fresh = f"{signed(h.candidate)} vs {base} {signed(h.baseline)}"
        in_sample = ""
        if h.candidate_in_sample is not None and h.baseline_in_sample is not None:
            in_sample = (f" (in-sample {signed(h.candidate_in_sample)} vs"
                         f" {signed(h.baseline_in_sample)})")
        verdict = "kept" if o.added else "rejected"
        parts.append(f"{players[o.player]} `{label}`: {fresh}{in_sample}, {verdict}")
    return "; ".join(parts) or "—"


def iteration_line(it: IterationReport, players: Sequence[str], bar: float | None) -> str:
    """One iteration's row; `bar` is the best constant mixture's mean fresh gain."""
    pops = " · ".join(", ".join(f"`{x}`" for x in pop) for pop in it.populations)
    driver = it.solutions[it.driver]
    value = ", ".join(signed(v) for v in driver.payoffs)
    gap = "NashConv" if driver.gap_name == "nash_conv" else "CCE gap"
    restricted = f"{value} ({gap} {driver.gap:.3f})"
    ref = it.reference
    if ref is None:
        full_cells = ["—"] * 4
    elif ref.unmapped:
        missing = ", ".join(f"`{x}`" for x in ref.unmapped)
        full_cells = [f"plays {missing}: not in the full game", *["—"] * 3]
    else:
        fresh = interval_of(ref, "fresh_gain")
        full_cells = [ci(interval_of(ref, "nash_conv")), ci(interval_of(ref, "gain")), ci(fresh),
                      share_cell(fresh, bar)]
    cells = [str(it.iteration), pops, added_cell(it, players), restricted, *full_cells,
             heldout_cell(it, players)]
    return "| " + " | ".join(cells) + " |"


def proposal_line(it: IterationReport, o: OracleResult, players: Sequence[str]) -> str:
    """What one oracle asked, what the proposer answered and how the candidates scored."""
    asked = []
    for call in o.calls:
        if call.purpose == "categories":
            what = "categories"
        else:
            what = f"values of \"{cell_text(call.category)}\"" if call.category else "values"
        if call.error:
            answer = f"{cell_text(call.error.split(':', 1)[0])} (raw: \"{cell_text(call.raw)}\")"
        else:
            answer = ", ".join(f"\"{cell_text(p)}\"" for p in call.parsed) or "nothing"
        if call.dropped:
            answer += " (dropped: " + ", ".join(f"{k} {n}" for k, n in call.dropped.items()) + ")"
        asked.append(f"{what}: {answer}")
    scored = ", ".join(f"`{cell_text(c.instruction)}` {signed(c.score)}" for c in o.candidates)
    best = (f"best current `{o.best_current_instruction}` {signed(o.best_current)}"
            if o.best_current_instruction else f"best current {signed(o.best_current)}")
    if o.added:
        outcome = f"added `{o.added}`"
    elif o.rejected:
        outcome = f"`{o.rejected}` rejected by the gate"
    else:
        outcome = o.reason or "nothing added"
    text = f"- iteration {it.iteration}, {players[o.player]}: " + "; ".join(asked)
    if scored:
        text += f". Scored in-sample: {scored} against the {best}"
    return text + f". {outcome[0].upper()}{outcome[1:]}."


def names_a_day(text: str, days: Sequence[str]) -> bool:
    words = set(text.lower().replace(",", " ").split())
    return any(d.lower() in words for d in days)


def proposals(summary: PSROSummary) -> list[str]:
    """Every value the proposer answered (categories left out), in order, once each."""
    seen: dict[str, None] = {}
    for it in summary.iterations:
        for o in it.oracles:
            for call in o.calls:
                if call.purpose == "instructions":
                    seen.update({p.strip(): None for p in call.parsed if p.strip()})
    return list(seen)


def reading(summary: PSROSummary, days: Sequence[str], players: Sequence[str]) -> str:
    """What the row's numbers say: the days found, and the goal on fresh samples."""
    adopted = [(it.iteration, players[p], a) for it in summary.iterations
               for p, a in enumerate(it.added) if a]
    adopted_days = [x for x in adopted if x[2] in days]
    said = proposals(summary)
    day_like = [p for p in said if names_a_day(p, days)]
    found = ("Days adopted: " + ", ".join(f"`{a}` ({who}, iteration {t})"
                                          for t, who, a in adopted_days) + "."
             if adopted_days else "No day was adopted.")
    other = [x for x in adopted if x[2] not in days]
    if other:
        found += " Adopted, not a day of the full game: " + ", ".join(
            f"`{a}` ({who}, iteration {t})" for t, who, a in other) + "."
    if said and not day_like:
        found += (f" None of its {len(said)} proposals"
                  " names a day (" + ", ".join(f"\"{cell_text(p, 30)}\"" for p in said[:12])
                  + (", …" if len(said) > 12 else "") + ").")
    elif said:
        found += (f" {len(day_like)} of its {len(said)} proposals name a day: "
                  + ", ".join(f"\"{cell_text(p, 30)}\"" for p in day_like) + ".")
    else:
        found += " The proposer made no valid proposal."
    last = summary.iterations[-1]
    ref, best = last.reference, summary.constant_reference
    steps = len(summary.iterations) - 1
    after = f"After {steps} oracle step{'s' if steps != 1 else ''}"
    if ref is None or best is None:
        return found + " No reference game was measured."
    if ref.unmapped:
        return found + (f" {after} the meta-strategy plays "
                        + ", ".join(f"`{x}`" for x in ref.unmapped)
                        + f", which the full game lacks, so it has no value there and the"
                          f" {pct(GOAL)} goal is not reached.")
    fresh = interval_of(ref, "fresh_gain")
    if fresh is None or best.fresh_gain is None:
        return found + " The fresh-sample gain is missing, so the goal cannot be judged."
    if best.fresh_gain <= 0:
        return found + (f" The best constant mixture gains {signed(best.fresh_gain)} on fresh"
                        " samples, not positive: there is no gain to reach a share of.")
    bar = GOAL * best.fresh_gain
    reached = fresh.mean >= bar
    text = (f" {after} the meta-strategy gains {signed(fresh.mean)} over `any` on fresh"
            f" samples, {pct(fresh.mean / best.fresh_gain)} of the best constant mixture's"
            f" {signed(best.fresh_gain)} (goal: {pct(GOAL)}, {signed(bar)}): the goal is "
            + ("**reached**" if reached else "**not reached**"))
    margin = mean_ci([(p.fresh_gain or 0.0) - GOAL * (q.fresh_gain or 0.0)
                      for p, q in zip(ref.per_instance, best.per_instance, strict=True)])
    if margin.side is not None:
        text += (f"; per instance, its fresh gain minus {pct(GOAL)} of the constant mixture's"
                 f" is {ci(margin)}, an interval that {against_zero(margin)}")
    first = next((it.iteration for it in summary.iterations
                  if it.reference is not None and not it.reference.unmapped
                  and it.reference.fresh_gain is not None and it.reference.fresh_gain >= bar),
                 None)
    if first is not None and first != last.iteration:
        text += f" (first reached at iteration {first})"
    text += "."
    if reached and not adopted:
        text += (" Nothing was adopted, so the start population alone meets the goal: this row"
                 " cannot show discovery against this bar.")
    if summary.num_games < MIN_GAMES:
        text += f" Only {summary.num_games} instances: the issues ask for {MIN_GAMES} or more."
    return found + text


def row_command(s: RowSettings, results: str) -> str:
    return (f"{COMMAND} --rows {s.row} --games {s.games} --iterations {s.iterations}"
            f" --candidates {s.candidates} --meta-solver {s.meta_solver} --llm {s.writer}"
            + (f" --proposer-llm {s.proposer}" if s.proposer != ROWS[s.row].proposer else "")
            + f" --results {results}")


def psro_command(s: RowSettings, results: str) -> str:
    return (f"gtsteer instances {s.reference} --seeded -n {s.games} --out {s.instances} &&"
            f" gtsteer psro {s.config} --instances {s.instances} --reference {s.reference}"
            f" -t {s.iterations} -k {s.candidates} --operator {s.operator}"
            f" --meta-solver {s.meta_solver} --llm {s.writer} --proposer-llm {s.proposer}"
            f" --heldout --heldout-gate --out {results}/{s.row}")


def constant_line(summary: PSROSummary, players: Sequence[str]) -> str:
    """The bar: the full game's best constant mixture, in-sample and fresh, with the
    per-instance CFR gain beside it for context."""
    best = summary.constant_reference
    if best is None:
        return "No best constant mixture was measured (a run without `--reference`)."
    chosen = ", ".join(f"{who} `{label}`" for who, label in zip(players, best.played, strict=True))
    return (f"The bar, the full game's best constant mixture (one instruction per player on every"
            f" instance, chosen on the solved samples): {chosen}; its gain over `any`"
            f" {ci(interval_of(best, 'gain'))} in-sample and {ci(interval_of(best, 'fresh_gain'))}"
            " on fresh samples. For context, per-instance CFR of the full game, which solves each"
            f" instance's private notes, gains {ci(interval_of(best, 'cfr_gain'))} in-sample.")


def render_row(row: StudyRow, summary: PSROSummary, results: str) -> list[str]:
    s = row.settings
    spec = load_spec(repo_config(s.reference))
    days = [d for d in spec.actions[summary.key] if d != "any"]
    players = list(spec.players)
    about = ROWS[s.row].about if s.proposer == ROWS[s.row].proposer else f"`{s.proposer}`"
    lines = [
        f"### `{s.row}`: proposer `{summary.proposer_model}` ({about}), {s.operator} oracle",
        "",
        f"`{row_command(s, results)}`",
        "",
        (f"The same run by hand: `{psro_command(s, results)}`. Writer and reader"
         f" `{summary.model}`, {s.meta_solver} meta-strategy, K = {s.candidates},"
         f" {summary.num_games} instances, measured {row.measured_at} at commit {row.commit}:"
         f" {row.new_calls} new model calls ({row.proposer_new_calls} by a separate proposer)"
         f" of {row.requests} requests, {row.wall_s:.0f} s. Converged: {summary.converged}."
         + (f" Stopped: {summary.stop_reason}." if summary.stop_reason not in (None, "converged")
            else "")),
        "",
        constant_line(summary, players),
        "",
        ("| it | population (" + " · ".join(players) + ") | added next | restricted value"
         f" ({', '.join(players)}) | NashConv, full game | gain over `any` | fresh gain |"
         " fresh share of the constant mixture's | proposal on fresh samples (gate) |"),
        "|---:|---|---|---|---|---|---|---|---|",
    ]
    bar = None if summary.constant_reference is None else summary.constant_reference.fresh_gain
    lines += [iteration_line(it, players, bar) for it in summary.iterations]
    lines += ["", "Proposals (each proposer answer as parsed; candidates scored against the"
                  " meta-strategy on the solved samples):", ""]
    lines += [proposal_line(it, o, players) for it in summary.iterations for o in it.oracles]
    lines += ["", "Reading (from the numbers above): " + reading(summary, days, players), ""]
    return lines


def render(rows: list[tuple[StudyRow, PSROSummary]], command: str, results: str,
           pending: Sequence[str], start: str, full: str,
           damaged: Sequence[str] = ()) -> str:
    """The section; `damaged` rows have saved files that could not be read (not shown)."""
    lines = [
        "## The discovery experiment (issues 40 and 57)",
        "",
        f"Command: `{command}` · {benchdoc.machine_line()}",
        "",
        (f"PSRO starts from `{start}` (each player: "
         + ", ".join(f"`{a}`" for a in load_spec(repo_config(start)).actions[
             load_spec(repo_config(start)).action_keys[0]])
         + f") and runs with `--heldout --heldout-gate --reference {full}` (every"
         " instruction), every row on the same instances file. The proposer's prompt shows the"
         " scenario and the current population. One table row per iteration:"),
        "",
        "- *population*: each player's instructions at that meta-game;",
        ("- *added next*: what its oracle added after it, or what the held-out gate"
         " rejected;"),
        ("- *restricted value*: the driver's payoffs in the restricted game, with its gap"
         " there;"),
        ("- the driver's meta-strategy played in the full game of every instance: its"
         " *NashConv* there, its *gain over `any`*, the *fresh gain* (the same on fresh"
         " samples) and that as a share of the best constant mixture's fresh gain;"),
        ("- *proposal on fresh samples*: the held-out gate's record. It gives the proposal's"
         " fresh-sample value against the meta-strategy beside its baseline's (the current"
         " instruction best in-sample), and both in-sample values."),
        "",
        ("Intervals are 95% Student-t over instances; a share's interval is the gain's"
         " interval over the constant mixture's mean fresh gain. Goal: the final fresh gain"
         f" reaches {pct(GOAL)} of the best constant mixture's (not of per-instance CFR, which"
         f" no single mixture can reach). Every number is read from `{results}/<row>/summary.json`;"
         " `--render-only` rewrites this section from those files. A saved row is kept on a"
         " rerun; `--remeasure` runs it again from the response cache."),
        "",
    ]
    for row, summary in rows:
        lines += render_row(row, summary, results)
    if pending:
        lines += ["Not measured yet: " + ", ".join(f"`{p}`" for p in pending)
                  + f" (`{COMMAND} --rows {','.join(pending)}` runs them)."]
    if damaged:
        lines += ["", "Saved rows that could not be read, not shown: "
                  + ", ".join(f"`{p}`" for p in damaged)
                  + f" (`{COMMAND} --rows {','.join(damaged)}` measures them again)."]
    return "\n".join(lines)


# ---- command line -------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = benchdoc.parser(COMMAND, __doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=MIN_GAMES,
                        help=f"instances (issue 40 asks for >= {MIN_GAMES})")
    parser.add_argument("--iterations", "-t", type=int, default=4, help="oracle steps T")
    parser.add_argument("--candidates", "-k", type=int, default=4,
                        help="candidates per call (shotgun) or per category (categorical)")
    parser.add_argument("--meta-solver", default="rd", choices=META_SOLVERS,
                        help="the meta-strategy the oracles answer (as gtsteer psro)")
    parser.add_argument("--rows", default=",".join(ROWS),
                        help="comma-separated rows, of: " + ", ".join(ROWS))
    parser.add_argument("--llm", default="local", help="the writer and reward reader")
    parser.add_argument("--proposer-llm", default=None,
                        help="replace every row's proposer (a dry run with `fake`)")
    parser.add_argument("--config", type=Path, default=START_CONFIG,
                        help="the start config PSRO grows")
    parser.add_argument("--reference", type=Path, default=FULL_CONFIG,
                        help="the full config (its seeded instances are played)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--doc", type=Path, default=DOC)
    benchdoc.add_ray_arguments(parser)
    parser.add_argument("--remeasure", action="store_true",
                        help="run saved rows again (from the response cache)")
    parser.add_argument("--render-only", action="store_true",
                        help="no model calls: write the section from the saved rows")
    args = parser.parse_args(argv)
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in args.rows if r not in ROWS]
    if unknown or not args.rows:
        parser.error(f"--rows: unknown {unknown}; choose from {', '.join(ROWS)}")
    if args.games < 2:
        parser.error("--games: at least 2 (an interval over instances)")
    if args.iterations < 1 or args.candidates < 1:
        parser.error("--iterations and --candidates: at least 1")
    args.ray_options = benchdoc.ray_options(parser, args)
    return args


def main(argv: list[str] | None = None, clients: Clients | None = None) -> None:
    """`clients(role, model)` gives the run its model per role (default: the model string)."""
    args = parse(argv)
    give: Clients = clients or (lambda _role, model: model)
    start, full, results = args.config.resolve(), args.reference.resolve(), args.results
    for config in (start, full):
        load_spec(config)  # a broken config fails here, before any model call
    check_out_file(args.doc, "--doc")
    results_shown = shown(results)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join([COMMAND, *(a for a in given if a != "--remeasure")])

    def settings_of(name: str, instances: str) -> RowSettings:
        row = ROWS[name]
        return RowSettings(row=name, writer=args.llm, proposer=args.proposer_llm or row.proposer,
                           operator=row.operator, games=args.games, iterations=args.iterations,
                           candidates=args.candidates, meta_solver=args.meta_solver, seed=0,
                           config=shown(start), reference=shown(full), instances=instances)

    def write() -> str:
        # every saved row, also those another --rows run measured
        rows, damaged = saved_rows(results, list(ROWS))
        for problem in damaged.values():
            print(f"{COMMAND}: skipped {problem}", file=sys.stderr, flush=True)
        done = {r.settings.row for r, _ in rows}
        text = render(rows, command, results_shown,
                      [r for r in ROWS if r not in done and r not in damaged],
                      shown(start), shown(full), list(damaged))
        start_marker, end_marker = benchdoc.markers(SECTION)
        benchdoc.write_section(args.doc, start_marker, end_marker,
                               benchdoc.wrap(start_marker, end_marker, text))
        return text

    if not args.render_only:
        instances = instances_file(results, full, args.games)
        for name in args.rows:
            settings = settings_of(name, shown(instances))
            if not args.remeasure and saved_row(results, settings) is not None:
                print(f"== {name}: saved row kept", flush=True)
                continue
            print(f"== {name}: proposer {settings.proposer}, {settings.operator} oracle,"
                  f" {settings.games} instances", flush=True)
            measure(settings, start, full, instances, results, give, args.ray_options)
            write()  # a stopped run keeps the finished rows
    print(write())


if __name__ == "__main__":
    main()
