"""Approximate best-response operators over instructions (arXiv 2402.01704, Algorithms 1-4).

An LLM (the proposer, any model string) invents instructions; each candidate is then scored
exactly: its expected payoff against the others' part of the current meta-strategy, on the
expanded branches (no sampling). Proposals that are empty, over-long, `any`, duplicates or
unparsable are dropped and counted; an operator whose proposer yields nothing valid returns
"no new instruction" instead of failing the run.

- shotgun: one call for K candidates, keep the best if it beats every current instruction;
- better: up to K calls of one candidate each, keep the first that beats the current value;
- trajectory: like shotgun, but the proposer sees the instructions ranked by payoff and sampled
  dialogues with their payoffs, lowest first;
- categorical: one call for new categories, then one call for K instructions per category.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from gtsteer.binding import DomainSpec, stable_int
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

Operator = Literal["shotgun", "better", "trajectory", "categorical"]
OPERATORS: tuple[str, ...] = ("shotgun", "better", "trajectory", "categorical")
PROPOSER_TEMPERATURE = 0.8
PROPOSER_MAX_TOKENS = 160
#: Categories asked for by the categorical operator (each then gets K instructions).
NUM_CATEGORIES = 2


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


class OracleResult(BaseModel):
    """What one operator did for one player in one iteration."""

    player: int
    operator: str
    #: u_i(meta-strategy) and the best current instruction's deviation payoff.
    current_value: float
    best_current: float
    calls: list[ProposerCall] = Field(default_factory=list)
    candidates: list[ScoredCandidate] = Field(default_factory=list)
    dropped: dict[str, int] = Field(default_factory=dict)
    tries: int = 0
    added: str | None = None
    added_category: str | None = None
    #: Why nothing was added ("no valid candidate", "no candidate improves").
    reason: str | None = None
    #: Meta-strategy probability on opponent profiles left out of candidate scoring (below
    #: `PSROConfig.support_tolerance`); scores may be off by at most this times the payoff span.
    ignored_mass: float = 0.0


#: Exact scores of candidate instructions for the focal player, labels -> expected payoff.
Scorer = Callable[[Sequence[str]], dict[str, float]]


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
    `make_prompt(example)` builds the prompt around the answer example chosen for this call."""
    seed = stable_int("psro-proposer", inp.seed, inp.iteration, inp.player, purpose, round_,
                      category or "")
    prompt = make_prompt(example_values(seed, known))
    call = ProposerCall(purpose=purpose, prompt=prompt, seed=seed, category=category)  # type: ignore[arg-type]
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


def _score_and_pick(inp: OracleInput, result: OracleResult, labels: list[str],
                    category_of: dict[str, str | None]) -> None:
    """Score `labels` exactly and add the best if it beats every current instruction."""
    if not labels:
        result.reason = "no valid candidate"
        return
    scores = inp.score(labels)
    result.candidates += [ScoredCandidate(instruction=c, score=scores[c],
                                          category=category_of.get(c)) for c in labels]
    best = max(labels, key=lambda c: (scores[c], -labels.index(c)))
    if scores[best] > result.best_current + inp.tolerance:
        result.added, result.added_category = best, category_of.get(best)
    else:
        result.reason = "no candidate improves on the current instructions"


def _shotgun(inp: OracleInput, result: OracleResult) -> None:
    call, filtered = _ask(
        inp, lambda ex: instructions_prompt(inp.spec, inp.key, inp.role, inp.population, inp.k, ex),
        "instructions", 0, inp.population,
    )
    result.calls.append(call)
    result.tries = 1
    _score_and_pick(inp, result, filtered.valid[: inp.k], {})


def _trajectory(inp: OracleInput, result: OracleResult) -> None:
    call, filtered = _ask(
        inp, lambda ex: ranked_prompt(inp.spec, inp.key, inp.role, inp.scores, inp.k,
                                      inp.dialogues, ex),
        "instructions", 0, inp.population,
    )
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
            inp, lambda ex, listed=listed: instructions_prompt(inp.spec, inp.key, inp.role,
                                                               listed, 1, ex),
            "instructions", round_, listed,
        )
        result.calls.append(call)
        result.tries = round_ + 1
        fresh = filtered.valid[:1]
        if not fresh:
            continue
        tried += fresh
        score = inp.score(fresh)[fresh[0]]
        result.candidates.append(ScoredCandidate(instruction=fresh[0], score=score))
        if score > inp.current_value + inp.tolerance:
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
            inp, lambda ex, category=category: instructions_prompt(
                inp.spec, inp.key, inp.role, inp.population, inp.k, ex, category=category),
            "instructions", i, [*inp.population, *labels], category=category,
        )
        result.calls.append(call)
        for label in found.valid[: inp.k]:
            labels.append(label)
            category_of[label] = category
    result.tries = len(result.calls)
    if not new_categories:
        result.reason = "no valid category"
        return
    _score_and_pick(inp, result, labels, category_of)
