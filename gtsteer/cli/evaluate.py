"""`gtsteer evaluate CONFIG --policy DIR`: a distilled policy against `any`, greedy and uniform
on fresh dialogues played live (docs/IMITATION.md, "Live evaluation")."""

from __future__ import annotations

from rich.table import Table

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
    FreshGames,
    ImitatedPolicy,
    LiveResume,
    LiveSamples,
    Out,
    Quiet,
    Scale,
    Seed,
    Served,
    WriterLlm,
)
from gtsteer.cli.overrides import overridable
from gtsteer.cli.solve import print_roles
from gtsteer.cli.spend import spending
from gtsteer.runs.evaluate_live import SUMMARY_FILE, EvaluateLiveOptions, EvaluateLiveResult
from gtsteer.runs.evaluate_live import run as run_evaluate


def print_result(result: EvaluateLiveResult) -> None:
    """The gain table (policy minus baseline, per player), the notes and where it was saved."""
    table = Table("player", "baseline", "gain", "95% CI", "n", "policy", "baseline value",
                  title=f"{result.domain}: the policy on fresh live dialogues (others `any`)")
    for s in result.stats:
        table.add_row(s.role, s.baseline, signed(s.gain.mean, 3), interval(s.gain, 3),
                      str(s.gain.n), signed(s.policy_value, 3), signed(s.baseline_value, 3))
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
    served: Served = Served(),
    seed: Seed = 0,
    out: Out = None,
    resume: LiveResume = False,
    quiet: Quiet = False,
    scale: Scale = Scale(),
) -> None:
    """Play fresh instances of CONFIG live, each seat on the policy, `any`, greedy and uniform
    (others on `any`, the same samples in every condition); write DIR/instances/<i>.json and
    DIR/evaluate.json with each gain's mean and 95% interval."""
    with friendly_errors():
        ctx = served.context(llm=llm, out=out, ray=scale.options(), progress=not quiet,
                             report=note)
        result = run_evaluate(config, ctx, parse_options(
            EvaluateLiveOptions, policy=str(policy), games=games, samples=samples, seed=seed,
            resume=resume))
    print_result(result)
