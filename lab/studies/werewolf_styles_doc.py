"""The docs section of `python -m lab werewolf-styles` (issue 43, item 1): one marked section of
docs/WEREWOLF_STEERING.md per writer model, written from a run's summary, which is itself
recomputed from the saved rows (`--render-only` rewrites it without any model).

What the tables show and how to read them is in the doc's section 5; this module only turns a
`StylesSummary` into that section, with the command that reproduces it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from gtsteer.solvers.metrics import MeanCI, Proportion
from gtsteer.werewolf.style_lines import NEUTRAL
from lab.bench import docsection
from lab.bench.benchdoc import repo_relative
from lab.studies.werewolf_styles import ISSUE_STATES, StylesConfig, StylesSummary

#: The code whose lines and readings the numbers are (for the section's commit).
CODE = ["gtsteer/werewolf", "gtsteer/llm", "gtsteer/evals", "gtsteer/runs", "lab/studies"]


def section_name(llm: str, states_from: str | None = None) -> str:
    """`werewolf_styles_local-smollm2-135m`: one section per writer model, and one more per
    states file it is measured at (`..._at-werewolf-fresh`), so a run that tests a lead on other
    states does not replace the run that found it."""
    name = "werewolf_styles_" + _slug(llm)
    if states_from:
        source = Path(states_from)
        name += "_at-" + _slug((source.parent if source.suffix else source).name)
    return name


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def command_of(cfg: StylesConfig, out: str | Path) -> str:
    """The command line that samples these rows (defaults left out)."""
    defaults = StylesConfig()
    args = ["python", "-m", "lab", "werewolf-styles", "--llm", cfg.llm, "--judge", cfg.judge,
            "--states", str(cfg.states)]
    flags = {"samples": "--samples", "games": "--games", "players": "--players",
             "max_messages": "--max-messages", "max_days": "--max-days",
             "max_speakers": "--speakers", "seed": "--seed", "states_from": "--states-from"}
    for field, flag in flags.items():
        value = getattr(cfg, field)
        if value != getattr(defaults, field):
            args += [flag, str(value)]
    if cfg.styles != defaults.styles:
        args += ["--styles", ",".join(cfg.styles)]
    return shlex.join([*args, "--out", str(out)])


def pct(a: Proportion) -> str:
    return f"{a.correct}/{a.n} = {a.accuracy:.0%} [{a.ci_low:.0%}, {a.ci_high:.0%}]"


def span(m: MeanCI, fmt: str = "+.2f") -> str:
    if m.n == 0:
        return "-"
    inside = ("" if m.ci_low is None or m.ci_high is None
              else f" [{m.ci_low:{fmt}}, {m.ci_high:{fmt}}]")
    return f"{m.mean:{fmt}}{inside}"


def mark(moved: bool) -> str:
    return " **moved**" if moved else ""


def verdict(summary: StylesSummary) -> str:
    llm = summary.config.llm
    if summary.nothing_moves:
        return (f"**No style moves any measure on `{llm}`**: every paired interval against "
                "`unsteered` holds 0, so on this model the style sentence does not measurably "
                "change the line, and a playstyle policy cannot matter here.")
    tests = len(summary.styles) * (2 + len(summary.validated))
    return (f"**Moved on `{llm}`** (paired interval excluding 0): " + "; ".join(summary.moved)
            + f". These are {len(summary.moved)} of {tests} paired comparisons at 95%, none"
            f" corrected for the others: with no effect at all about {tests * 0.05:.1f} would"
            " exclude 0 by chance, so read a single one as a lead to test on more states, not"
            " as a found effect.")


def validation_lines(summary: StylesSummary) -> list[str]:
    out = []
    for v in summary.validations:
        a = v.accuracy
        out.append(f"- `{v.variant}`: {a.correct}/{a.n} = {a.accuracy:.0%} "
                   f"[{a.ci_low:.0%}, {a.ci_high:.0%}] vs chance {v.chance:.0%}: "
                   + ("passes, its readings count" if v.passes
                      else "fails, its readings are not counted"))
    return out


def proxy_table(summary: StylesSummary) -> list[str]:
    u = summary.unsteered
    rows = ["| style | lines | words per line | words vs unsteered [95% t] | names a living "
            "player [95% Wilson] | vs unsteered [95% t] (McNemar p) |",
            "|---|---:|---:|---:|---:|---:|",
            f"| unsteered | {u.lines} | {span(u.words, '.1f')} | | {pct(u.names)} | |"]
    for r in summary.styles:
        p = r.names_paired
        rows.append(
            f"| {r.style} | {r.lines} | {span(r.words, '.1f')} | "
            f"{span(r.words_paired.diff, '+.1f')}{mark(r.words_paired.moved)} | {pct(r.names)} | "
            f"{span(p.diff)} ({p.mcnemar_p:.2f}){mark(p.moved)} |")
    return rows


def judge_table(summary: StylesSummary, variant: str) -> list[str]:
    u = summary.unsteered.reads[variant]
    rows = [f"Judge `{summary.judge}`, variant `{variant}` (chance {1 / len(u):.0%}; the "
            f"unsteered lines read as `{NEUTRAL}`: {u.get(NEUTRAL, 0.0):.0%}):", "",
            "| style | read as its style [95% Wilson] | p above chance | unsteered lines read "
            "so | paired difference [95% t] (McNemar p) |",
            "|---|---:|---:|---:|---:|"]
    for r in summary.styles:
        m = next(j for j in r.judge if j.variant == variant)
        rows.append(f"| {r.style} | {pct(m.own)} | {m.p_above_chance:.3f} | {pct(m.base)} | "
                    f"{span(m.paired.diff)} ({m.paired.mcnemar_p:.2f}){mark(m.paired.moved)} |")
    return rows


def render(summary: StylesSummary, out: str | Path, commit: str) -> str:
    """The section of one writer model (markers included)."""
    cfg = summary.config
    start, end = docsection.markers(section_name(cfg.llm, cfg.states_from))
    at = f", at the states of `{cfg.states_from}`" if cfg.states_from else ""
    trial = (f" A trial: fewer than the issue's {ISSUE_STATES} states."
             if summary.states < ISSUE_STATES else "")
    shown = repo_relative(summary.labelled)
    parts = [
        f"### Writer `{cfg.llm}`, judge `{summary.judge}`{at}", "",
        f"Command: `{command_of(cfg, out)}`", "",
        f"Rows complete {summary.finished_at or 'at an unknown time'}, rendered at commit "
        f"{commit}: {summary.states} logged discussion states x {cfg.samples} sample(s) x "
        f"{len(cfg.styles)} styles = {summary.lines} lines (`lines.jsonl` in the run folder "
        f"holds each with its readings).{trial}", "",
        f"The judge on the labelled lines (`{shown}`):", "",
        *validation_lines(summary), "",
        *proxy_table(summary), "",
    ]
    for variant in summary.validated:
        parts += [*judge_table(summary, variant), ""]
    if not summary.validated:
        parts += ["No variant of the judge passed validation, so no line is counted as read "
                  "as a style; only the two proxies measure the lines here.", ""]
    parts.append(verdict(summary))
    return docsection.wrap(start, end, "\n".join(parts))


def document(summary: StylesSummary, out: str | Path, doc: str | Path) -> Path:
    """Write (or replace) the writer model's section of `doc`; returns the doc's path."""
    path = Path(doc)
    start, end = docsection.markers(section_name(summary.config.llm, summary.config.states_from))
    docsection.write_section(path, start, end, render(summary, out, docsection.commit(CODE)))
    return path

