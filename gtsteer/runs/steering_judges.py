"""Steering judges: which value of an action key does a message show?

`gtsteer eval steering` needs a judge to turn messages into accuracies; `gtsteer eval judge`
checks a judge on hand-labelled messages first (`gtsteer.runs.eval_judge`). Three kinds:

- `LoglikJudge(llm)`: argmax_z [log P(z | message) - log P(z | no message)] through
  `LLM.choose`, calibrated on content-free messages (contextual calibration, Zhao et al. 2021);
  on API models a constrained choice, uncalibrated. What eval steering has always used.
- `PairwiseJudge(llm)`: for every pair of values, "is this message more A or more B?" (the same
  calibrated choice over two options); the value winning most pairs, ties to the larger summed
  margin. C(n, 2) calls per message instead of one.
- `EmbeddingJudge(name)`: the value whose text (its name, or "name: definition") is nearest to
  the message by cosine of sentence embeddings (MiniLM by default). No language model, no
  llama.cpp; deterministic.

Spelled on the command line as a model string (`local:smollm2-135m`), `pairwise:<model>` or
`embed` / `embed:<sentence-transformers name or folder>` (`make_judge`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from gtsteer.binding import ANY, DomainSpec
from gtsteer.binding.progress import GatherBar
from gtsteer.llm import LLM, ChoiceResult, as_llm

PLAIN, DEFINED = "plain", "definitions"
VARIANTS = (PLAIN, DEFINED)
#: Content-free messages whose mean scores estimate the classifier's label prior.
NULL_MESSAGES = ("", "N/A")
EMBED_PREFIX, PAIRWISE_PREFIX = "embed", "pairwise:"


def options_of(spec: DomainSpec, key: str) -> list[str]:
    return [v for v in spec.actions[key] if v != ANY]


def classifier_prompt(
    spec: DomainSpec, key: str, speaker: str, message: str, definitions: bool
) -> str:
    """Which value of `key` the message shows; the options are scored as its continuation."""
    options = options_of(spec, key)
    lines = [
        f'Message from {speaker}: "{message}"',
        "",
        f"Which {key} does this message show? The choices are: {', '.join(options)}.",
    ]
    if definitions:
        lines.append("What each choice means:")
        defs = spec.instruction_definitions[key]
        lines += [f"- {value}: {defs[value]}" for value in options]
    lines += ["Answer with one of the choices.", f"The {key} is:"]
    return "\n".join(lines)


def pairwise_prompt(
    spec: DomainSpec, key: str, speaker: str, message: str, pair: tuple[str, str],
    definitions: bool,
) -> str:
    """Which of two values the message shows more; both options are scored as the answer."""
    a, b = pair
    lines = [f'Message from {speaker}: "{message}"', ""]
    if definitions:
        defs = spec.instruction_definitions[key]
        lines += [f"- {a}: {defs[a]}", f"- {b}: {defs[b]}"]
    lines += [f"Is the {key} of this message more {a} or more {b}?", "Answer:"]
    return "\n".join(lines)


class Judged(BaseModel):
    """One message's verdict: `predicted` (calibrated where the judge calibrates), the raw
    argmax, the raw score per option and the content-free prior (None: not calibrated)."""

    predicted: str
    predicted_uncalibrated: str
    scores: dict[str, float]
    prior: dict[str, float] | None = None


class Judge(Protocol):
    #: How reports name the judge: the model string, `pairwise:<model>` or `embed:<embedder>`.
    name: str

    async def judge(
        self, spec: DomainSpec, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Judged]:
        """One verdict per (speaker, message), in order."""
        ...


def _calibrated_best(options: list[str], scores: dict[str, float], prior: dict[str, float]) -> str:
    return max(options, key=lambda o: scores[o] - prior[o])  # max keeps the first of equals


async def _priors(
    score, contexts: Sequence[tuple[str, ...]], bar: GatherBar, options_for
) -> dict[tuple[str, ...], dict[str, float] | None]:
    """Mean score of each option over the content-free messages, per prompt context; None
    where the backend made a constrained choice (no likelihoods to calibrate)."""
    nulls = [(c, m) for c in contexts for m in NULL_MESSAGES]
    found: list[ChoiceResult] = await bar.gather(
        "calibrate", [score(*c, m) for c, m in nulls]
    )
    priors: dict[tuple[str, ...], dict[str, float] | None] = {}
    for context in contexts:
        results = [r for (c, _), r in zip(nulls, found, strict=True) if c == context]
        if all(r.method in ("loglik", "hash") for r in results):
            priors[context] = {
                o: float(np.mean([r.scores[o] for r in results])) for o in options_for(context)
            }
        else:
            priors[context] = None
    return priors


class LoglikJudge:
    """argmax_z P(z | message) over the key's values, calibrated on content-free messages."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = llm.model

    async def judge(
        self, spec: DomainSpec, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Judged]:
        options = options_of(spec, key)

        async def score(speaker: str, message: str) -> ChoiceResult:
            prompt = classifier_prompt(spec, key, speaker, message, variant == DEFINED)
            return await self.llm.choose(prompt, options, seed=0)

        # The label prior depends on the prompt around the message: here, the speaker.
        speakers = [(s,) for s in dict.fromkeys(s for s, _ in items)]
        priors = await _priors(score, speakers, bar, lambda _: options)
        results = await bar.gather("classify", [score(s, m) for s, m in items])
        out = []
        for (speaker, _), result in zip(items, results, strict=True):
            prior = priors[(speaker,)]
            best = result.choice if prior is None else _calibrated_best(options, result.scores,
                                                                        prior)
            out.append(Judged(predicted=best, predicted_uncalibrated=result.choice,
                              scores=result.scores, prior=prior))
        return out


class PairwiseJudge:
    """Round-robin over value pairs: each pair a calibrated two-way choice, most wins wins."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = PAIRWISE_PREFIX + llm.model

    async def judge(
        self, spec: DomainSpec, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Judged]:
        options = options_of(spec, key)
        pairs = list(itertools.combinations(options, 2))

        async def score(speaker: str, a: str, b: str, message: str) -> ChoiceResult:
            prompt = pairwise_prompt(spec, key, speaker, message, (a, b), variant == DEFINED)
            return await self.llm.choose(prompt, [a, b], seed=0)

        speakers = list(dict.fromkeys(s for s, _ in items))
        contexts = [(s, a, b) for s in speakers for a, b in pairs]
        priors = await _priors(score, contexts, bar, lambda c: list(c[1:]))
        asks = [(s, m, a, b) for s, m in items for a, b in pairs]
        results = await bar.gather("compare", [score(s, a, b, m) for s, m, a, b in asks])
        by_ask = dict(zip(asks, results, strict=True))
        out = []
        for speaker, message in items:
            wins = dict.fromkeys(options, 0.0)
            raw_wins = dict.fromkeys(options, 0.0)
            margin = dict.fromkeys(options, 0.0)
            for a, b in pairs:
                result = by_ask[(speaker, message, a, b)]
                raw_wins[result.choice] += 1
                prior = priors[(speaker, a, b)] or {a: 0.0, b: 0.0}
                gap = (result.scores[a] - prior[a]) - (result.scores[b] - prior[b])
                wins[a if gap >= 0 else b] += 1
                margin[a] += gap
                margin[b] -= gap
            best = max(options, key=lambda o: (wins[o], margin[o]))
            raw = max(options, key=lambda o: raw_wins[o])
            calibrated = all(priors[(speaker, a, b)] is not None for a, b in pairs)
            out.append(Judged(predicted=best, predicted_uncalibrated=raw, scores=wins,
                              prior={o: 0.0 for o in options} if calibrated else None))
        return out


class EmbeddingJudge:
    """Nearest value text by cosine similarity of sentence embeddings.

    Without definitions a value's text is its name ("Tuesday", "pathos"); with them it is
    "name: definition". The message is embedded as it is."""

    def __init__(self, embedder: str | None = None) -> None:
        from gtsteer.llm.embed import get_embedder

        self.embedder = get_embedder(embedder, strict=True)
        self.name = f"{EMBED_PREFIX}:{self.embedder.name}"

    def value_texts(self, spec: DomainSpec, key: str, variant: str) -> list[str]:
        options = options_of(spec, key)
        if variant != DEFINED:
            return options
        defs = spec.instruction_definitions[key]
        return [f"{o}: {defs[o]}" for o in options]

    async def judge(
        self, spec: DomainSpec, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Judged]:
        options = options_of(spec, key)
        texts = self.value_texts(spec, key, variant)
        messages = [m for _, m in items]
        # Encoding is CPU-bound and synchronous: off the event loop, one call for every text.
        vectors = await asyncio.to_thread(self.embedder.embed, [*texts, *messages])
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        anchors, rows = unit[: len(texts)], unit[len(texts):]
        out = []
        for sims in rows @ anchors.T:
            scores = {o: float(s) for o, s in zip(options, sims, strict=True)}
            best = max(options, key=lambda o: scores[o])
            out.append(Judged(predicted=best, predicted_uncalibrated=best, scores=scores))
        return out


def names_a_judge(spec: str | LLM | Judge) -> bool:
    """Whether `spec` is a judge (or a judge's spelling) rather than a model that judges by
    its calibrated likelihoods: then it plays no model role of the run."""
    if isinstance(spec, LLM):
        return False
    if not isinstance(spec, str):
        return True
    return spec == EMBED_PREFIX or spec.startswith((EMBED_PREFIX + ":", PAIRWISE_PREFIX))


def make_judge(spec: str | LLM | Judge) -> Judge:
    """A judge from its command-line spelling (see the module docstring), or as given."""
    if isinstance(spec, LLM):
        return LoglikJudge(spec)
    if not isinstance(spec, str):
        return spec
    if spec == EMBED_PREFIX or spec.startswith(EMBED_PREFIX + ":"):
        return EmbeddingJudge(spec.partition(":")[2] or None)
    if spec.startswith(PAIRWISE_PREFIX):
        model = spec[len(PAIRWISE_PREFIX):]
        if not model:
            raise ValueError("judge: `pairwise:` needs a model, e.g. pairwise:local:smollm2-135m")
        return PairwiseJudge(as_llm(model))
    return LoglikJudge(as_llm(spec))


def judge_models(judge: Judge) -> list[LLM]:
    """The language models a judge calls (for metering); none for an embedding judge."""
    llm = getattr(judge, "llm", None)
    return [llm] if isinstance(llm, LLM) else []
