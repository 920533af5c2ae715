"""`gtsteer evaluate CONFIG --policy DIR`: a distilled policy against `any`, greedy and uniform
on fresh dialogues played live (docs/IMITATION.md, "Live evaluation")."""

from __future__ import annotations

import typer
from rich.table import Table

from gtsteer.cli.common import (
    console,
    endpoint_of,
    final,
    friendly_errors,
    note,
    parse_options,
    ray_options,
)
from gtsteer.cli.options import (
    ApiBase,
    ApiKeyEnv,
    ConfigArg,
    FreshGames,
    ImitatedPolicy,
    LiveResume,
    LiveSamples,
    MaxWait,
    Out,
    Quiet,
    Ray,
    RequestTimeout,
    Seed,
    Workers,
    WriterLlm,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.solve import print_roles
from gtsteer.cli.spend import spending
from gtsteer.runs.context import RunContext
from gtsteer.runs.evaluate_live import SUMMARY_FILE, EvaluateLiveOptions, EvaluateLiveResult
from gtsteer.runs.evaluate_live import run as run_evaluate

#: The flag of each `EvaluateLiveOptions` field, for its errors.
FLAGS = {"policy": "--policy", "games": "--games", "seed": "--seed", "samples": "--samples",
         "resume": "--resume"}


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{round(x, 3) + 0.0:+.3f}"


def print_result(result: EvaluateLiveResult) -> None:
    """The gain table (policy minus baseline, per player), the notes and where it was saved."""
    table = Table("player", "baseline", "gain", "95% CI", "n", "policy", "baseline value",
                  title=f"{result.domain}: the policy on fresh live dialogues (others `any`)")
    for s in result.stats:
        ci = ("— (1 instance)" if s.gain.ci_low is None
              else f"[{_signed(s.gain.ci_low)}, {_signed(s.gain.ci_high)}]")
        table.add_row(s.role, s.baseline, _signed(s.gain.mean), ci, str(s.gain.n),
                      _signed(s.policy_value), _signed(s.baseline_value))
    console.print(table)
    for line in result.notes:
        console.print(f"note: {line}", highlight=False, soft_wrap=True)
    print_roles(result.roles)
    final(f"saved: {result.folder / SUMMARY_FILE}")


@overridable
@spending(budget=True)
def evaluate(
    config: ConfigArg,
    policy: ImitatedPolicy,
    games: FreshGames = 20,
    samples: LiveSamples = 1,
    llm: WriterLlm = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    request_timeout: RequestTimeout = None,
    max_wait: MaxWait = None,
    seed: Seed = 0,
    out: Out = None,
    resume: LiveResume = False,
    quiet: Quiet = False,
    ray: Ray = None,
    workers: Workers = None,
) -> None:
    """Play fresh instances of CONFIG live, each seat on the policy, `any`, greedy and uniform
    (others on `any`, the same samples in every condition); write DIR/instances/<i>.json and
    DIR/evaluate.json with each gain's mean and 95% interval."""
    on_ray = ray_options(ray, workers)
    with friendly_errors():
        served = endpoint_of(api_base, api_key_env, request_timeout, max_wait)
        ctx = RunContext.of(llm=llm, endpoint=served, out=out, ray=on_ray,
                            progress=not quiet, report=note)
        result = run_evaluate(config, ctx, parse_options(
            EvaluateLiveOptions, FLAGS, policy=str(policy), games=games, samples=samples,
            seed=seed, resume=resume))
    print_result(result)


def register(app: typer.Typer) -> None:
    """Add the `evaluate` command to the top-level app."""
    app.command("evaluate")(evaluate)
