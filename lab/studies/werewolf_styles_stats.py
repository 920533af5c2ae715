"""The statistics of `python -m lab werewolf-styles`: pure functions of the sampled lines' rows,
and the two proxies that read a line with no judge (`words`, `named_players`).

Each style is compared with `unsteered` on the same states (paired by state and sample): words
per line, how often a line names a living player, and how often the judge reads a line as the
style (per judge variant, counting only where the judge passed validation); the confusion of
styles and readings per variant. The readings the judge chooses among are the product's
(`gtsteer.werewolf.style_lines.READINGS`, `gtsteer eval judge werewolf_playstyle`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from gtsteer.evals.prompts import VARIANTS
from gtsteer.evals.steering import Confusion
from gtsteer.solvers.metrics import MeanCI, Proportion, mcnemar_exact, mean_ci, wilson
from gtsteer.werewolf.playstyles import UNSTEERED
from gtsteer.werewolf.style_lines import READINGS
from lab.studies.significance import above_chance

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def words(line: str) -> int:
    """The words of a line (letters and digits; "don't" is one word): a quiet observer should
    say less."""
    return len(_WORD.findall(line))


def named_players(line: str, names: Iterable[str]) -> list[str]:
    """The `names` the line says as whole words (any case), in the order of `names`: an
    aggressive provoker should name a suspect more often."""
    return [n for n in names
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])", line, re.IGNORECASE)]


class StyleLine(BaseModel):
    """One sampled line: a row of `lines.jsonl` (the summary is recomputed from these)."""

    #: The run's key (`run_key`): a rerun keeps only rows of the same settings.
    key: str
    #: The state's index in `states.jsonl`, its logged game and step.
    state: int
    game_id: str
    step: int
    day: int
    speaker: str
    team: str
    style: str
    sample: int
    text: str
    words: int
    #: Other players the line names (any, and the living, who can be voted out).
    named: list[str]
    named_living: list[str]
    #: The judge's reading per variant (calibrated where it calibrates), the raw argmax, and
    #: the raw score of every reading.
    reads: dict[str, str]
    reads_uncalibrated: dict[str, str]
    scores: dict[str, dict[str, float]]
    #: Samples the line took (the live resample guard's extra tries included).
    calls: int

    @property
    def run_key(self) -> str:
        """`key` by the name the runs' `Ledger` reads (the rows keep their field's name)."""
        return self.key


class Paired(BaseModel):
    """A style minus `unsteered` on the same states: the per-state difference (mean over
    samples), its mean over states with a 95% Student-t interval; for a yes/no measure also
    the discordant pairs (yes only under the style / only unsteered) and the exact McNemar p."""

    diff: MeanCI
    style_only: int | None = None
    unsteered_only: int | None = None
    mcnemar_p: float | None = None

    @property
    def moved(self) -> bool:
        """The interval excludes 0."""
        return self.diff.side in (1, -1)


class JudgeMeasure(BaseModel):
    """One style's lines as the judge reads them, in one variant."""

    variant: str
    #: The variant passed validation on the labelled lines: only then do its numbers count.
    validated: bool
    #: Lines of the style read as that style.
    own: Proportion
    chance: float
    #: One-sided exact binomial p of `own` against chance.
    p_above_chance: float
    #: Unsteered lines (same states) read as this style: what the style has to beat.
    base: Proportion
    paired: Paired


class StyleResult(BaseModel):
    style: str
    lines: int
    words: MeanCI
    words_paired: Paired
    #: Lines naming another living player.
    names: Proportion
    names_paired: Paired
    judge: list[JudgeMeasure]
    #: The measures this style moves against unsteered (paired interval excluding 0).
    moved: list[str]


class UnsteeredResult(BaseModel):
    lines: int
    words: MeanCI
    names: Proportion
    #: variant -> reading -> share of the unsteered lines read so.
    reads: dict[str, dict[str, float]]



def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def paired(rows: list[StyleLine], style: str, value: Any, binary: bool = False) -> Paired:
    """`style` minus `unsteered` on `value(row)`, paired by (state, sample); the per-state mean
    difference over states (t interval); McNemar on the (state, sample) pairs when `binary`."""
    by = {(r.state, r.sample, r.style): r for r in rows}
    per_state: dict[int, list[float]] = defaultdict(list)
    style_only = unsteered_only = 0
    for (state, sample, s), row in sorted(by.items()):
        base = by.get((state, sample, UNSTEERED))
        if s != style or base is None:
            continue
        a, b = float(value(row)), float(value(base))
        per_state[state].append(a - b)
        style_only += int(a > b)
        unsteered_only += int(b > a)
    diff = mean_ci([_mean(d) for _, d in sorted(per_state.items())])
    if not binary:
        return Paired(diff=diff)
    return Paired(diff=diff, style_only=style_only, unsteered_only=unsteered_only,
                  mcnemar_p=mcnemar_exact(style_only, unsteered_only))


def share(rows: list[StyleLine], hit: Any) -> Proportion:
    """The rows for which `hit(row)` holds, with a 95% Wilson interval (0 of 0: all zeros)."""
    return wilson(sum(bool(hit(r)) for r in rows), len(rows))


def summarise(rows: list[StyleLine], styles: list[str], validated: list[str],
              variants: tuple[str, ...] = VARIANTS) -> tuple[UnsteeredResult, list[StyleResult],
                                                            list[Confusion], list[str]]:
    """The numbers per style from the rows alone (see the module docstring): the unsteered
    baseline, each style against it, the confusion per variant, and what moved."""
    readings = list(READINGS)
    chance = 1 / len(readings)
    base_rows = [r for r in rows if r.style == UNSTEERED]
    unsteered = UnsteeredResult(
        lines=len(base_rows), words=mean_ci([r.words for r in base_rows]),
        names=share(base_rows, lambda r: r.named_living),
        reads={v: {o: sum(r.reads.get(v) == o for r in base_rows) / max(1, len(base_rows))
                   for o in readings} for v in variants})
    results, moved = [], []
    for style in styles:
        if style == UNSTEERED:
            continue
        mine = [r for r in rows if r.style == style]
        judge = []
        for v in variants:
            own = share(mine, lambda r, v=v, s=style: r.reads.get(v) == s)
            judge.append(JudgeMeasure(
                variant=v, validated=v in validated, own=own, chance=chance,
                p_above_chance=above_chance(own.correct, own.n, chance),
                base=share(base_rows, lambda r, v=v, s=style: r.reads.get(v) == s),
                paired=paired(rows, style, lambda r, v=v, s=style: r.reads.get(v) == s,
                              binary=True)))
        result = StyleResult(
            style=style, lines=len(mine), words=mean_ci([r.words for r in mine]),
            words_paired=paired(rows, style, lambda r: r.words),
            names=share(mine, lambda r: r.named_living),
            names_paired=paired(rows, style, lambda r: bool(r.named_living), binary=True),
            judge=judge, moved=[])
        if result.words_paired.moved:
            result.moved.append("words")
        if result.names_paired.moved:
            result.moved.append("names a player")
        result.moved += [f"read as {style} ({m.variant})" for m in judge
                         if m.validated and m.paired.moved]
        moved += [f"{style}: {m}" for m in result.moved]
        results.append(result)
    confusion = [Confusion(of=v, rows=list(styles), columns=readings, counts=[
        [sum(r.style == s and r.reads.get(v) == o for r in rows) for o in readings]
        for s in styles]) for v in variants]
    return unsteered, results, confusion, moved
