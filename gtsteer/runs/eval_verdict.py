"""`gtsteer eval verdict`: naive vs strategic questioner in a verdict game, judge by judge.

The verdict-games paper reports a strategic prosecutor winning 64% against 27% for a naive one,
with one hand-written judge prompt, no intervals and no code. This driver plays `games`
instances per (policy, judge prompt, judge temperature) with paired instances and seeds (the
strategic questioner's first candidate is the naive questioner's message), and reports each
cell's win rate with a 95% Wilson interval, so a reader sees whether the gap survives another
wording of the judge or another temperature. Output: report.json, games.jsonl, verdict.png.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gtsteer.binding import Instance, generate_instances
from gtsteer.binding.progress import GatherBar
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains import load_spec
from gtsteer.domains.verdict import verdict_table
from gtsteer.domains.verdict_play import (
    GameOutcome,
    JudgeSetting,
    NaiveQuestioner,
    Questioner,
    StrategicQuestioner,
    play_verdict_game,
)
from gtsteer.evals.verdict import VerdictCell, verdict_cell, win_totals
from gtsteer.llm import LLM
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.output import (
    RunResult,
    finish_run_dir,
    prepare_run_dir,
    pyplot,
    save_png,
    write_text,
)
from gtsteer.solvers.metrics import WinRate

DEFAULT_TEMPERATURES = (0.0, 1.0)
DEFAULT_BREADTH, DEFAULT_DEPTH = 10, 1


class VerdictEvalReport(RunResult):
    #: The report format (1: the first versioned one).
    schema_version: int = 1
    config: str
    domain: str
    model: str
    seed: int
    games: int
    questioner: str
    target_verdict: str
    breadth: int
    depth: int
    judge_prompts: list[str]
    temperatures: list[float]
    cells: list[VerdictCell]
    #: Each policy pooled over every judge setting.
    totals: dict[str, WinRate]
    llm_requests: int
    new_llm_calls: int


def _check(spec: DomainSpec, games: int, temperatures: list[float], breadth: int,
           depth: int) -> None:
    table = verdict_table(spec)  # a verdict game at all (DomainCheckError names the field)
    assert spec.judge is not None
    first = 0 if spec.opening is None else (spec.opening_speaker + 1) % spec.num_players
    if table.questioner != first:
        # the strategic look-ahead plays whole rounds that start with the questioner
        raise ValueError(f"params.questioner: must be the first speaker ({first}) of a round")
    if games < 1:
        raise ValueError(f"games: must be >= 1, got {games}")
    if len(spec.judge.prompts) < 2:
        raise ValueError(
            "judge.alternative_prompts: the robustness check needs at least one other wording"
        )
    if len(set(temperatures)) < 2 or any(t < 0 for t in temperatures):
        raise ValueError(f"temperatures: need two or more distinct values >= 0, got {temperatures}")
    if breadth < 1 or depth < 1:
        raise ValueError(f"breadth/depth: must be >= 1, got {breadth}/{depth}")


@dataclass(frozen=True)
class InstanceGames:
    """Every (judge setting, policy) game of one instance, the unit of work: the games of an
    instance share prompts (the strategic questioner's first candidate is the naive one's
    message), those of two instances none, so instances are the independent units."""

    spec: DomainSpec
    jobs: list[tuple[Questioner, JudgeSetting, Instance]]
    seed: int


async def play_instance(unit: InstanceGames, model: LLM, bar: GatherBar) -> list[GameOutcome]:
    return await bar.gather("verdict games", [
        play_verdict_game(model, unit.spec, instance, policy, setting, unit.seed)
        for policy, setting, instance in unit.jobs
    ])


class VerdictOptions(Options):
    """`gtsteer eval verdict`'s options (the model comes with the run context)."""

    #: Games per policy and judge setting (`--games`), on as many instances.
    games: int = 20
    seed: int = 0
    #: Judge temperatures (None: `DEFAULT_TEMPERATURES`).
    temperatures: list[float] | None = None
    #: The strategic questioner's candidates per question and look-ahead rounds.
    breadth: int = DEFAULT_BREADTH
    depth: int = DEFAULT_DEPTH


@driver("eval verdict")
def run(config: str | Path, ctx: RunContext, options: VerdictOptions) -> VerdictEvalReport:
    """`gtsteer eval verdict`: play every (policy, judge prompt, temperature, instance) game;
    write report.json, games.jsonl and verdict.png. The unit of work is one instance's games
    (on Ray: one task each); the files are the same either way."""
    games, seed, breadth, depth = options.games, options.seed, options.breadth, options.depth
    spec = load_spec(config)
    temps = list(DEFAULT_TEMPERATURES if options.temperatures is None else options.temperatures)
    _check(spec, games, temps, breadth, depth)
    assert spec.judge is not None
    table = verdict_table(spec)
    model, _, _ = ctx.roles(spec)
    before = model.usage
    policies: list[Questioner] = [NaiveQuestioner(), StrategicQuestioner(breadth, depth)]
    settings = [JudgeSetting(i, t) for i in range(len(spec.judge.prompts)) for t in temps]
    instances = generate_instances(spec, games, seed)
    jobs = [(p, s, inst) for s in settings for p in policies for inst in instances]
    with ctx.executor.session():
        outcomes = ctx.executor.gather_grouped(
            play_instance, jobs, lambda job: job[2].index,
            lambda mine: InstanceGames(spec, mine, seed), model, label="instances")
    cells: list[VerdictCell] = []
    totals: dict[str, list[GameOutcome]] = {p.name: [] for p in policies}
    for setting in settings:
        for policy in policies:
            mine = [o for (p, s, _), o in zip(jobs, outcomes, strict=True)
                    if p is policy and s == setting]
            totals[policy.name] += mine
            cells.append(verdict_cell(policy.name, setting.prompt_index, setting.temperature,
                                      mine, spec.judge.verdicts))
    calls = model.usage.since(before)
    report = VerdictEvalReport(
        config=str(config), domain=spec.name, model=model.model, seed=seed, games=games,
        questioner=spec.players[table.questioner], target_verdict=table.target_verdict,
        breadth=breadth, depth=depth, judge_prompts=spec.judge.prompts, temperatures=temps,
        cells=cells,
        totals=win_totals(totals),
        llm_requests=calls.requests,
        new_llm_calls=calls.new_calls,
    )
    out = ctx.folder("eval-verdict", config, model, seed)
    _write(out, report, jobs, outcomes)
    return report.written_to(out)


def _write(out: Path, report: VerdictEvalReport, jobs: list, outcomes: list[GameOutcome]) -> None:
    prepare_run_dir(out, summary="report.json")
    rows = [{"policy": policy.name, "prompt_index": setting.prompt_index,
             "temperature": setting.temperature, **outcome.model_dump(mode="json")}
            for (policy, setting, _), outcome in zip(jobs, outcomes, strict=True)]
    write_text(out / "games.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    plot_win_rates(report, out / "verdict.png")
    finish_run_dir(out, "report.json", report)


def plot_win_rates(report: VerdictEvalReport, path: Path) -> Path:
    """Grouped bars: one group per judge setting, one bar per policy, 95% intervals."""
    import numpy as np

    plt = pyplot()
    policies = list(report.totals)
    settings = sorted({(c.prompt_index, c.temperature) for c in report.cells})
    x = np.arange(len(settings))
    width = 0.8 / len(policies)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(settings), 3.6))
    for k, name in enumerate(policies):
        cells = {(c.prompt_index, c.temperature): c for c in report.cells if c.policy == name}
        rates = [cells[s].win.accuracy for s in settings]
        err = [[cells[s].win.accuracy - cells[s].win.ci_low for s in settings],
               [cells[s].win.ci_high - cells[s].win.accuracy for s in settings]]
        ax.bar(x + (k - (len(policies) - 1) / 2) * width, rates, width, yerr=err, capsize=3,
               label=name)
    ax.set_xticks(x, [f"prompt {p}\nT={t:g}" for p, t in settings])
    ax.set_ylim(0, 1)
    ax.set_ylabel(f"{report.questioner} win rate")
    ax.set_title(f"{report.domain}: {report.games} games per bar, 95% Wilson CI")
    ax.legend()
    return save_png(fig, path)
