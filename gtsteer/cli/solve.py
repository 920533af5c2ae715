"""`gtsteer solve CONFIG`: expand, solve with CFR, measure, write results and print tables."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from gtsteer.binding import cost_profile
from gtsteer.cli.common import (
    console,
    final,
    friendly_errors,
    interval,
    note,
    parse_options,
    signed,
)
from gtsteer.cli.options import (
    ConfigArg,
    Deals,
    Embedder,
    Games,
    HeldoutGain,
    InstancesFile,
    InstancesResume,
    Iterations,
    MaxCalls,
    Out,
    Quiet,
    Scale,
    Seed,
    Served,
    Solver,
    WriterLlm,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.spend import spending
from gtsteer.evals.solve_metrics import HeadToHead, HeldOutMetrics
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import write_json
from gtsteer.runs.solve import (
    DEFAULT_ITERATIONS,
    DEFAULT_SOLVER,
    READERS,
    SolveOptions,
    tree_bound,
)
from gtsteer.runs.solve import run as run_solve
from gtsteer.runs.solve_schema import SolveSummary
from gtsteer.solvers.analysis import ALWAYS
from gtsteer.solvers.metrics import Metric


def print_summary(summary: SolveSummary) -> None:
    """Metrics, head-to-head and first-instruction tables of a finished run."""
    mode = (
        f"dealt: root chance deals 1 of {summary.num_deals} private-info draws"
        if summary.mode == "dealt"
        else "per instance: the solver sees every private fact (use --deals K to hide them)"
    )
    console.print(f"mode: {mode}")
    if summary.metrics is not None:
        table = Table("metric", "mean", "95% CI", "n", title=f"{summary.domain}: {summary.solver}")
        for name, metric in summary.metrics.model_dump().items():
            if metric is None:  # held-out gain not asked for
                continue
            m = Metric.model_validate(metric)
            table.add_row(name, signed(m.mean), interval(m), str(m.n))
        console.print(table)
    if summary.head_to_head is not None:
        print_head_to_head(summary.head_to_head)
    for dist in summary.instruction_distribution:
        table = Table(
            "instruction", "P(first)", title=f"CFR policy, {dist.role} (player {dist.player})"
        )
        for label, p in dist.probs.items():
            table.add_row(label, f"{p:.3f}")
        console.print(table)
    print_roles(summary.roles)
    console.print(
        f"solver: {summary.solver_backend or 'n/a'} · clipped rewards:"
        f" {summary.clipped_rewards} · echoed instructions stripped: {summary.echoed_messages}"
    )
    if summary.num_failed:
        console.print(
            f"[yellow]{summary.num_failed} of {summary.num_games} instances failed[/]"
            f" ({summary.num_solved} solved)"
        )
    if summary.heldout:
        console.print(
            f"held-out: {len(summary.heldout_instances)} instances, {summary.heldout_decisions}"
            f" replayed decisions: {summary.heldout_borrowed} borrowed from the solved tree's"
            f" other samples, {summary.heldout_unmatched} with no solved position (played"
            " `any`, which pulls the held-out gain toward 0)"
            + (f", {summary.heldout_pooled} mixed over deals the player cannot tell apart"
               if summary.heldout_pooled else "")
        )
        if summary.heldout_metrics is not None:
            print_heldout(summary.heldout_metrics)
        if (missing := summary.num_solved - len(summary.heldout_instances)) > 0:
            console.print(f"[yellow]held-out gain missing for {missing} solved instance(s);"
                          " see `heldout_failure` in games/<i>.json[/]")
    for failure in summary.failures:  # shown with -q too
        final(f"instance {failure.instance} failed ({failure.stage}): {failure.reason}")


def print_heldout(held: HeldOutMetrics) -> None:
    """The held-out gain: its clean part, then each replay per player and decision depth."""
    table = Table("replay", "player", "depth", "mean", "95% CI", "n",
                  title="CFR gain on fresh samples (others on `any`)",
                  caption="clean: the first mover's opening decision, replayed exactly (the"
                  " clean estimate); history: every decision by action history, blind to the"
                  " fresh text; nearest, distilled: replays that read the fresh text")

    def row(label: str, player: str, depth: str, m: Metric, end: bool = False) -> None:
        table.add_row(label, player, depth, signed(m.mean), interval(m), str(m.n), end_section=end)

    first = str(held.clean_player)
    row("clean", first, "0 exact", held.clean)
    row("  in-sample", first, "0", held.clean_in_sample)
    row("  selection", first, "0", held.clean_selection, end=True)
    for name, replay in held.replays.items():
        for cell in replay.by_depth:
            row(name, str(cell.player), f"{cell.depth}{' exact' if cell.exact else ''}", cell.gain)
        row(name, "mean", "all", replay.cfr_gain, end=True)
    console.print(table)


def print_roles(roles: dict[str, RoleRecord]) -> None:
    """One line: which model played each role and where it came from (no key, ever)."""
    if roles:
        console.print("models: " + ", ".join(
            f"{role} {r.model}" + (f" at {r.api_base}" if r.api_base else "") + f" ({r.source})"
            for role, r in roles.items()), highlight=False)


def _h2h_label(name: str, names: list[str]) -> str:
    """`always:calm` is shown as `calm` (unless that would read as another row's name)."""
    short = name.removeprefix(ALWAYS)
    return short if short == name or short not in names else name


def print_head_to_head(h2h: HeadToHead, out: Console | None = None) -> None:
    """The head-to-head table, split into column chunks that fit the console, so no cell is
    ever truncated however many strategies there are (rich would squeeze every column)."""
    out = out or console
    names = h2h.strategies
    labels = [_h2h_label(n, names) for n in names]
    cells = {r: [signed(h2h.values[r][c], 2) for c in names] for r in names}
    corner = "row \\ col"
    # A rich column costs its content plus 2 of padding and 1 of border; the table 1 more.
    used = first = max(len(corner), *map(len, labels)) + 3 + 1
    chunks: list[list[int]] = [[]]
    for j, label in enumerate(labels):
        width = max(len(label), *(len(cells[r][j]) for r in names)) + 3
        if chunks[-1] and used + width > out.width:
            chunks.append([])
            used = first
        chunks[-1].append(j)
        used += width
    title = "head-to-head: mean over seats i of V_i(i plays row, others play col)"
    for k, cols in enumerate(chunks):
        part = f" ({k + 1}/{len(chunks)})" if len(chunks) > 1 else ""
        table = Table(
            Column(corner, no_wrap=True),
            *(Column(labels[j], justify="right", no_wrap=True) for j in cols),
            title=title + part,
        )
        for row, label in zip(names, labels, strict=True):
            table.add_row(label, *(cells[row][j] for j in cols))
        out.print(table)


#: `--profile`'s file in the run folder.
PROFILE_FILE = "profile.json"


def print_profile(costs: cost_profile.CostProfile, out: Console = console) -> None:
    """The cost profile as a table: one row per phase, then the seconds outside them."""
    table = Table("phase", "requests", "new calls", "prompt tokens", "evaluated", "generated",
                  "discarded", "novel", "seconds", title="cost by phase (profile.json)")
    for p in costs.phases.values():
        share = p.discarded_share
        discarded = "" if share is None else f"{p.discarded_tokens} ({share:.0%})"
        evaluated = "" if p.prompt_tokens_evaluated is None else str(p.prompt_tokens_evaluated)
        novel = "" if p.tokens_novel is None else str(p.tokens_novel)
        table.add_row(p.phase, str(p.requests), str(p.new_calls), str(p.prompt_tokens),
                      evaluated, str(p.completion_tokens), discarded, novel, f"{p.wall_s:.1f}")
    table.add_row("(outside the phases)", *[""] * 7, f"{costs.unaccounted_s:.1f}")
    table.add_row("total", *[""] * 7, f"{costs.total_s:.1f}")
    out.print(table)


def counted_tokens(profile: bool) -> AbstractContextManager[None]:
    """With `--profile`, local models count each call's novel tokens and block floor for the
    run (the floors of `python -m lab profile`)."""
    if not profile:
        return nullcontext()
    from gtsteer.llm.backends.local import counting_tokens  # llama.cpp only when profiling

    return counting_tokens()


@overridable
@spending(budget=True)
def solve(
    ctx: typer.Context,
    config: ConfigArg,
    llm: WriterLlm = None,
    served: Served = Served(),
    games: Games = 1,
    instances: InstancesFile = None,
    iterations: Iterations = DEFAULT_ITERATIONS,
    solver: Solver = DEFAULT_SOLVER,
    seed: Seed = 0,
    deals: Deals = None,
    out: Out = None,
    heldout: HeldoutGain = False,
    heldout_readers: Annotated[
        str,
        typer.Option("--heldout-readers", help="Comma-separated replays that read the fresh"
                     f" text, beside the history replay ({', '.join(READERS)}; '' for none)."),
    ] = ",".join(READERS),
    embedder: Embedder = None,
    max_calls: MaxCalls = None,
    resume: InstancesResume = False,
    profile: Annotated[
        bool,
        typer.Option("--profile", help="Also write DIR/profile.json: calls, prompt tokens"
                     " evaluated, tokens generated (and discarded by cleaning), novel tokens (on"
                     " the local model: what no reuse could save) and seconds per phase"
                     " (messages, end checks, rewards; the fresh tree's apart). Serial only."),
    ] = False,
    quiet: Quiet = False,
    scale: Scale = Scale(),
) -> None:
    """Expand each instance's game tree, solve it with CFR and write DIR/summary.json."""
    given = ctx.get_parameter_source("games")  # --games 1 counts: it was given
    if instances is not None and given is not None and given.name != "DEFAULT":
        raise typer.BadParameter("give --games or --instances, not both", param_hint="--games")
    if profile and scale.ray is not None:
        raise typer.BadParameter("a profile reads one process's meters: run without --ray",
                                 param_hint="--profile")
    on_ray = scale.options()
    with friendly_errors(), cost_profile.profiling() as costs, counted_tokens(profile):
        run_ctx = served.context(llm=llm, embedder=embedder, out=out, ray=on_ray,
                                 progress=not quiet, report=note)
        options = parse_options(
            SolveOptions, {"instances_file": "--instances", "readers": "--heldout-readers"},
            games=games, instances_file=instances, iterations=iterations, solver=solver,
            seed=seed, deals=deals, heldout=heldout,
            readers=[r.strip() for r in heldout_readers.split(",") if r.strip()],
            max_calls=tree_bound(max_calls), resume=resume)
        summary = run_solve(config, run_ctx, options)
    print_summary(summary)
    if profile:
        write_json(summary.folder / PROFILE_FILE, costs)
        print_profile(costs)
        console.print(f"profile: {summary.folder / PROFILE_FILE}")
    final(f"summary: {summary.folder / 'summary.json'}")
    if summary.metrics is None:  # every instance failed: the run produced no result
        raise typer.Exit(code=1)
