"""Approximate best-response operators over instructions (arXiv 2402.01704, Algorithms 1-4).

An LLM (the proposer, any model string) invents instructions; each candidate is then scored
exactly: its expected payoff against the others' part of the current meta-strategy, on the
expanded branches (no sampling). It is compared with a baseline computed in the same call, on
the same instances and opponent weights (the current instructions' best score, or the current
value), so truncating the meta-strategy's support or losing an instance moves both alike.
Proposals that are empty, over-long, `any`, duplicates or unparsable are dropped and counted;
an operator whose proposer yields nothing valid returns "no new instruction" instead of
failing the run. The four operators (shotgun, better, trajectory, categorical) are described
in docs/PSRO.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from pydantic import BaseModel, Field

from gtsteer.binding import ANY, DomainSpec, stable_int
from gtsteer.binding.prompts import DEFAULT_INSTRUCTION, fill_template
from gtsteer.llm import LLM, LLMError, StructuredOutputError, run_sync
from gtsteer.solvers.psro.candidates import MAX_INSTRUCTION_CHARS, Filtered, filter_candidates
from gtsteer.solvers.psro.prompts import (
    ProposalList,
    SampledDialogue,
    categories_prompt,
    example_values,
    instructions_prompt,
    ranked_prompt,
)

OPERATORS: tuple[str, ...] = ("shotgun", "better", "trajectory", "categorical")
PROPOSER_TEMPERATURE = 0.8
PROPOSER_MAX_TOKENS = 160
#: Categories asked for by the categorical operator (each then gets K instructions).
NUM_CATEGORIES = 2
#: A category's value fills the key's template slot ("in a {value} tone"): the prompt asks for
#: one to three words, and a longer answer is a sentence of its own ("offer a small concession
#: first"), which the template would make ungrammatical.
MAX_CATEGORY_VALUE_WORDS = 3


class ProposerCall(BaseModel):
    """One question to the proposer: its prompt, raw answer and what was parsed from it."""

    purpose: Literal["instructions", "categories"]
    prompt: str
    seed: int
    raw: str = ""
    parsed: list[str] = Field(default_factory=list)
    valid: list[str] = Field(default_factory=list)
    dropped: dict[str, int] = Field(default_factory=dict)
    category: str | None = None
    error: str | None = None


class ScoredCandidate(BaseModel):
    instruction: str
    score: float
    category: str | None = None
    #: The sentence the dialogue model is given for it (the key's template, filled).
    rendered: str = ""


class HeldOutCheck(BaseModel):
    """An adopted instruction and its baseline re-scored on fresh LLM samples.

    The baseline is fixed on the solved samples before the fresh ones are looked at: the
    current instruction that scored best in-sample (`baseline_instruction`), or for `better`
    the meta-strategy's value (its mixture was solved in-sample). Re-picking the best current
    instruction on the fresh scores would select on the very noise the check is meant to
    expose: with n equally good instructions a candidate would pass about 1/(n+1) of the time."""

    #: Fresh-sample scores of the candidate and of the baseline (None: nothing to score on).
    candidate: float | None
    baseline: float | None
    holds: bool
    #: Their scores on the solved samples (what the oracle compared).
    candidate_in_sample: float | None = None
    baseline_in_sample: float | None = None
    #: The current instruction the baseline is (None: the meta-strategy's value, `better`).
    baseline_instruction: str | None = None
    instances: list[int] = Field(default_factory=list)
    #: Why there are no fresh-sample numbers (every instance failed to expand there).
    error: str | None = None


class OracleResult(BaseModel):
    """What one operator did for one player in one iteration."""

    player: int
    operator: str
    #: u_i(meta-strategy) and the best current instruction's deviation payoff: the baselines
    #: the candidates were compared with (scored with them: same instances, same support).
    current_value: float
    best_current: float
    #: The current instruction whose score is `best_current` (the first of equal ones).
    best_current_instruction: str | None = None
    calls: list[ProposerCall] = Field(default_factory=list)
    candidates: list[ScoredCandidate] = Field(default_factory=list)
    dropped: dict[str, int] = Field(default_factory=dict)
    tries: int = 0
    #: The action added to the population (an existing action of the game when the proposal
    #: was one in other words, e.g. "Fierce!" -> "fierce"); `proposed` is the proposer's text.
    added: str | None = None
    proposed: str | None = None
    added_category: str | None = None
    #: `PSROConfig.heldout`: the adopted instruction on fresh samples (None without it).
    heldout: HeldOutCheck | None = None
    #: `PSROConfig.heldout_gate`: the instruction that beat its baseline in-sample but not on
    #: fresh samples, so was not added (`heldout` has both sides' scores). Not "nothing
    #: found": a run does not converge on an iteration with a rejection.
    rejected: str | None = None
    #: Why nothing was added ("no valid candidate", "no candidate improves", a rejection).
    reason: str | None = None
    #: Meta-strategy probability on opponent profiles left out of candidate scoring (below
    #: `PSROConfig.support_tolerance`); scores may be off by at most this times the payoff span.
    ignored_mass: float = 0.0

    @property
    def no_candidate(self) -> bool:
        """The proposer produced nothing usable: no candidate was scored (every proposal
        empty, unparsable, a duplicate, ... or the call failed)."""
        return not self.candidates and self.added is None and self.rejected is None


@dataclass(frozen=True)
class Scores:
    """Candidates' expected payoffs and the baselines, from one meta-game build."""

    candidates: dict[str, float]
    #: max over the current instructions of their score (same opponents' weights).
    best_current: float
    #: u_i(meta-strategy) restricted to the same opponent profiles.
    current_value: float
    instances: list[int] = field(default_factory=list)
    #: Every current instruction's score (population order; `best_current` is their max).
    current: dict[str, float] = field(default_factory=dict)

    @property
    def best_current_instruction(self) -> str | None:
        """The first current instruction scoring `best_current` (None if none was given)."""
        return next((x for x, v in self.current.items() if v == self.best_current), None)


#: Exact scores of candidate instructions for the focal player (with their baselines).
Scorer = Callable[[Sequence[str]], Scores]


@dataclass
class OracleInput:
    """Everything an operator may look at; built by the PSRO loop for one player."""

    spec: DomainSpec
    key: str
    player: int
    population: list[str]
    scores: dict[str, float]
    current_value: float
    score: Scorer
    proposer: LLM
    k: int
    iteration: int
    seed: int
    tolerance: float
    categories: dict[str, str] = field(default_factory=dict)
    dialogues: list[SampledDialogue] = field(default_factory=list)

    @property
    def role(self) -> str:
        return self.spec.players[self.player]


def run_oracle(operator: str, inp: OracleInput) -> OracleResult:
    """Dispatch to the named operator (ValueError names an unknown one)."""
    if operator not in OPERATORS:
        raise ValueError(f"operator: expected one of {', '.join(OPERATORS)}, got {operator!r}")
    if inp.k < 1:
        raise ValueError(f"candidates: must be >= 1, got {inp.k}")
    result = OracleResult(
        player=inp.player, operator=operator, current_value=inp.current_value,
        best_current=max(inp.scores.values()),
    )
    {"shotgun": _shotgun, "better": _better, "trajectory": _trajectory,
     "categorical": _categorical}[operator](inp, result)
    for call in result.calls:
        for reason, n in call.dropped.items():
            result.dropped[reason] = result.dropped.get(reason, 0) + n
    return result


def _ask(inp: OracleInput, make_prompt: Callable[[list[str]], str], purpose: str, round_: int,
         known: Sequence[str], category: str | None = None) -> tuple[ProposerCall, Filtered]:
    """One proposer call; never raises for a bad answer (it is recorded and counted).
    `make_prompt(example)` builds the prompt around the answer example chosen for this call:
    for values, two of the config's `psro.examples` (else the population's own values); for
    categories, the categories so far (values are no example of a kind of value)."""
    seed = stable_int("psro-proposer", inp.seed, inp.iteration, inp.player, purpose, round_,
                      category or "")
    if purpose == "categories":
        example = [c for c in known if c != ANY][-2:]
    else:
        example = example_values(inp.spec, seed, known)
    prompt = make_prompt(example)
    call = ProposerCall(purpose=purpose, prompt=prompt, seed=seed, category=category)
    filtered = Filtered()
    try:
        answer = run_sync(inp.proposer.structured(
            prompt, ProposalList, seed=seed, temperature=PROPOSER_TEMPERATURE,
            max_tokens=PROPOSER_MAX_TOKENS, attempts=1,
        ))
    except StructuredOutputError as exc:
        call.raw, call.error = exc.last_raw, "unparsable: " + "; ".join(exc.problems)[:300]
        filtered.dropped["unparsable"] += 1
    except LLMError as exc:
        call.error = f"{type(exc).__name__}: {exc}"[:300]
        filtered.dropped["failed_call"] += 1
    else:
        call.raw, call.parsed = answer.raw, list(answer.value.instructions)
        filtered = filter_candidates(call.parsed, known, max_chars=MAX_INSTRUCTION_CHARS)
        if not call.parsed:
            filtered.dropped["empty"] += 1
    call.valid = list(filtered.valid)
    call.dropped = dict(filtered.dropped)
    return call, filtered


def rendered(spec: DomainSpec, key: str, value: str, name: str = "the speaker") -> str:
    """The instruction sentence the dialogue model reads for `value` of `key`."""
    template = spec.instruction_templates.get(key, DEFAULT_INSTRUCTION)
    return fill_template(template, {"name": name, "key": key, "value": value}).strip()


def _score_and_pick(inp: OracleInput, result: OracleResult, labels: list[str],
                    category_of: dict[str, str | None]) -> None:
    """Score `labels` exactly and add the best if it beats every current instruction."""
    if not labels:
        result.reason = "no valid candidate"
        return
    scored = inp.score(labels)
    scores = scored.candidates
    result.best_current, result.current_value = scored.best_current, scored.current_value
    result.best_current_instruction = scored.best_current_instruction
    result.candidates += [ScoredCandidate(instruction=c, score=scores[c],
                                          category=category_of.get(c),
                                          rendered=rendered(inp.spec, inp.key, c))
                          for c in labels]
    best = max(labels, key=lambda c: (scores[c], -labels.index(c)))
    if scores[best] > scored.best_current + inp.tolerance:
        result.added, result.added_category = best, category_of.get(best)
    else:
        result.reason = "no candidate improves on the current instructions"


def _shotgun(inp: OracleInput, result: OracleResult) -> None:
    _one_call(inp, result, lambda ex: instructions_prompt(inp.spec, inp.key, inp.role,
                                                          inp.population, inp.k, ex))


def _trajectory(inp: OracleInput, result: OracleResult) -> None:
    _one_call(inp, result, lambda ex: ranked_prompt(inp.spec, inp.key, inp.role, inp.scores,
                                                    inp.k, inp.dialogues, ex))


def _one_call(inp: OracleInput, result: OracleResult,
              make_prompt: Callable[[list[str]], str]) -> None:
    """One proposer call for K candidates; the best is added if it beats every current one."""
    call, filtered = _ask(inp, make_prompt, "instructions", 0, inp.population)
    result.calls.append(call)
    result.tries = 1
    _score_and_pick(inp, result, filtered.valid[: inp.k], {})


def _better(inp: OracleInput, result: OracleResult) -> None:
    """Rejection sampling: at most K proposer calls; the first candidate that beats the
    player's current meta-strategy value is added."""
    tried: list[str] = []
    for round_ in range(inp.k):
        listed = [*inp.population, *tried]
        call, filtered = _ask(
            inp, partial(instructions_prompt, inp.spec, inp.key, inp.role, listed, 1),
            "instructions", round_, listed,
        )
        result.calls.append(call)
        result.tries = round_ + 1
        fresh = filtered.valid[:1]
        if not fresh:
            continue
        tried += fresh
        scored = inp.score(fresh)
        score = scored.candidates[fresh[0]]
        result.best_current, result.current_value = scored.best_current, scored.current_value
        result.best_current_instruction = scored.best_current_instruction
        result.candidates.append(ScoredCandidate(instruction=fresh[0], score=score,
                                                 rendered=rendered(inp.spec, inp.key, fresh[0])))
        if score > scored.current_value + inp.tolerance:
            result.added = fresh[0]
            return
    result.reason = ("no valid candidate" if not tried
                     else f"no candidate beat the current value in {inp.k} tries")


def _categorical(inp: OracleInput, result: OracleResult) -> None:
    categories = inp.categories or {v: inp.key for v in inp.population}
    per_category: dict[str, list[float]] = {}
    for value in inp.population:
        per_category.setdefault(categories.get(value, inp.key), []).append(inp.scores[value])
    averages = {c: sum(v) / len(v) for c, v in per_category.items()}
    call, filtered = _ask(
        inp, lambda ex: categories_prompt(inp.spec, inp.key, inp.role, averages, NUM_CATEGORIES,
                                          ex),
        "categories", 0, list(averages),
    )
    result.calls.append(call)
    new_categories = filtered.valid[:NUM_CATEGORIES]
    labels: list[str] = []
    category_of: dict[str, str | None] = {}
    for i, category in enumerate(new_categories):
        call, found = _ask(
            inp, partial(instructions_prompt, inp.spec, inp.key, inp.role, inp.population, inp.k,
                         category=category),
            "instructions", i, [*inp.population, *labels], category=category,
        )
        fitting = [v for v in found.valid if len(v.split()) <= MAX_CATEGORY_VALUE_WORDS]
        if len(fitting) < len(found.valid):
            call.dropped["does_not_fit"] = len(found.valid) - len(fitting)
            call.valid = fitting
        result.calls.append(call)
        for label in fitting[: inp.k]:
            labels.append(label)
            category_of[label] = category
    result.tries = len(result.calls)
    if not new_categories:
        result.reason = "no valid category"
        return
    _score_and_pick(inp, result, labels, category_of)
