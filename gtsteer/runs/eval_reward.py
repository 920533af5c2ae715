"""`gtsteer eval reward`: does the reward path score finished dialogues correctly?

The domain's case writer makes N templated two-message dialogues per outcome type whose true
payoffs it knows; each is scored by `configured` (the config's own reward path, exactly as the
game scores terminals) and by `free` (the LLM computes both payoffs itself from everyone's
private information and the transcript). Per path and outcome type: the mean absolute error
over the instance's own payoff range (`binding.reward.payoff_bounds`, so the config's
worst-case range does not shrink it) and the sign-flip rate (the paper's Table 8). A case whose
structured answer never validated is a failure, not an error size. Hand-labelled dialogues
instead of templated ones: `eval_reward_labelled` (`--labelled`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from gtsteer.binding import DomainSpec, RewardContext, compute_reward, make_instance
from gtsteer.binding.instances import stable_int
from gtsteer.binding.progress import GatherBar
from gtsteer.binding.reward import payoff_bounds
from gtsteer.binding.reward_cases import OUTCOMES, RewardCase, reward_cases_for
from gtsteer.binding.spec import parse_spec
from gtsteer.domains import load_spec
from gtsteer.evals.reward import PathError, ScoredCase, path_error
from gtsteer.llm import LLM, LLMCalls, LLMError
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.output import RunResult, check_out_dir, write_json

#: 2: `sgn` (an `Accuracy` whose `accuracy` held the flip rate) became `sign_flips`.
SCHEMA_VERSION = 2
CONFIGURED, FREE = "configured", "free"
MAX_CASES = 1000

FREE_PROMPT = """{scenario}

What each person privately knows:
{private_info_all}

Conversation:
{transcript}

%(rule)s
Give each person's payoff as a number from %(low)g to %(high)g.
Answer:
"""


class RewardReport(RunResult):
    """`DIR/reward.json`."""

    schema_version: int = SCHEMA_VERSION
    config: str
    domain: str
    model: str
    cases_per_outcome: int
    seed: int
    payoff_bounds: tuple[float, float]
    #: What `configured` means for this config ("extract-then-compute (utility X)").
    configured_path: str
    paths: list[str]
    errors: list[PathError]
    cases: list[ScoredCase]
    llm_calls: LLMCalls

    def error(self, path: str, outcome: str) -> PathError:
        return next(e for e in self.errors if e.path == path and e.outcome == outcome)


def free_spec(spec: DomainSpec, rule: str) -> DomainSpec:
    """The spec played by its domain without the utility, and a prompt asking the LLM for the
    payoffs."""
    prompt = FREE_PROMPT % {"rule": rule, "low": spec.payoff.min, "high": spec.payoff.max}
    data = spec.model_dump()
    data["payoff"] = {**data["payoff"], "prompt": prompt}
    return parse_spec(data, "free path").with_domain(spec.hooks.without_utility(), "free path")


def write_cases(spec: DomainSpec, cases: int, seed: int) -> list[RewardCase]:
    """`cases` dialogues per outcome type, each over its own generated instance."""
    writer = reward_cases_for(spec).writer
    out = []
    for outcome in OUTCOMES:
        for i in range(cases):
            instance = make_instance(spec, i, seed)
            rng = random.Random(stable_int("gtsteer-reward-case", spec.name, seed, outcome, i))
            out.append(writer(spec, rng, instance, outcome))
    return out


@dataclass(frozen=True)
class CaseBatch:
    """The cases of one generated instance (one per outcome type), the unit of work: no two
    instances share a prompt, so the batches are independent."""

    specs: dict[str, DomainSpec]
    cases: list[RewardCase]


async def score_batch(batch: CaseBatch, model: LLM, bar: GatherBar) -> list[ScoredCase]:
    """Every case of the batch scored on every path."""
    specs, cases = batch.specs, batch.cases

    async def one(case: RewardCase, path: str) -> tuple[list[float] | None, str | None]:
        ctx = RewardContext(
            spec=specs[path], instance=case.instance, transcript=case.transcript, llm=model
        )
        try:
            return (await compute_reward(ctx)).returns, None
        except LLMError as exc:
            return None, f"{type(exc).__name__}: {exc}"

    results = await bar.gather("rewards", [one(c, p) for c in cases for p in specs])
    out = []
    it = iter(results)
    for case in cases:
        predicted, failures = {}, {}
        for path in specs:
            value, why = next(it)
            predicted[path] = value
            if why is not None:
                failures[path] = why
        names = case.instance.names
        out.append(ScoredCase(
            outcome=case.outcome, instance=case.instance.index,
            transcript="\n".join(f"{names[t.speaker]}: {t.text}" for t in case.transcript),
            facts=case.facts, truth=case.truth,
            bounds=payoff_bounds(specs[CONFIGURED], case.instance), predicted=predicted,
            failures=failures,
        ))
    return out


def configured_path(spec: DomainSpec) -> str:
    """What `configured` means for this config, naming the reading of what was agreed where
    the domain has several (fruit by offer: `exact` or `ask`, `params.agreement`)."""
    reading = spec.hooks.reward_cases.agreement if spec.hooks.reward_cases else None
    how = "" if reading is None else f", agreement read `{next(iter(reading.readers(spec)))}`"
    return f"extract-then-compute (utility `{spec.hooks.name}`{how})"


class RewardOptions(Options):
    """`gtsteer eval reward`'s options (the model comes with the run context)."""

    #: Templated dialogues per outcome type (`--cases`).
    cases: int = 10
    seed: int = 0


def measure(config: str | Path, ctx: RunContext, options: RewardOptions) -> RewardReport:
    """Write the cases, score them on every path, and summarise; nothing is written to disk.
    The unit of work is one generated instance's cases (on Ray: one task each); the report
    is the same either way. The model: the context's writer (`--llm`)."""
    cases, seed = options.cases, options.seed
    if not 1 <= cases <= MAX_CASES:
        raise ValueError(f"cases: must be between 1 and {MAX_CASES}, got {cases}")
    spec = load_spec(config)
    domain = reward_cases_for(spec)  # a clear error for domains without known payoffs
    model, _, _ = ctx.roles(spec)
    specs = {CONFIGURED: spec, FREE: free_spec(spec, domain.payoff_rule)}
    written = write_cases(spec, cases, seed)
    before = model.usage
    with ctx.executor.session():
        scored = ctx.executor.gather_grouped(score_batch, written, lambda c: c.instance.index,
                                             partial(CaseBatch, specs), model,
                                             label="case batches")
    after = model.usage
    errors = [
        path_error(path, outcome, scored)
        for path in specs for outcome in (*OUTCOMES, "all")
    ]
    return RewardReport(
        config=str(config), domain=spec.name, model=model.model, cases_per_outcome=cases,
        seed=seed, payoff_bounds=(spec.payoff.min, spec.payoff.max),
        configured_path=configured_path(spec),
        paths=list(specs), errors=errors, cases=scored,
        llm_calls=after.since(before),
    )


@driver("eval reward")
def run(config: str | Path, ctx: RunContext, options: RewardOptions) -> RewardReport:
    """`gtsteer eval reward`: measure, then write DIR/reward.json."""
    out = check_out_dir(ctx.folder("eval-reward", config, ctx.writer_name(load_spec(config)),
                                   options.seed))
    report = measure(config, ctx, options)
    write_json(out / "reward.json", report)
    return report.written_to(out)
