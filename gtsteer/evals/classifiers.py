"""Steering classifiers: which value of an action key does a message show?

`gtsteer eval steering` needs a steering classifier to turn messages into accuracies, and
`gtsteer eval judge` checks one on hand-labelled messages first (`gtsteer.evals.validation`).
Four kinds:

- `LoglikClassifier(llm)`: argmax_z [log P(z | message) - log P(z | no message)] through
  `LLM.choose`, calibrated on content-free messages (`gtsteer.evals.calibration`); on API
  models a constrained choice, uncalibrated. What eval steering has always used.
- `PairwiseClassifier(llm)`: for every pair of values, "is this message more A or more B?"
  (the same calibrated choice over two options); the value winning most pairs, ties to the
  larger summed margin. C(n, 2) calls per message instead of one.
- `EmbeddingClassifier(name)`: the value whose text (its name, or "name: definition") is
  nearest to the message by cosine of sentence embeddings (MiniLM by default). No language
  model, no llama.cpp; deterministic.
- `ParseClassifier()`: the value the config's domain reads in the message by exact parsing
  (`Domain.parse_message`: the offer domain reads counts and fruit words), or none. No model;
  for instructions whose content can be read exactly, where a model or an embedding would
  only approximate it ("1 apple for 2 bananas" and its reverse embed alike).

Spelled on the command line (`--classifier-llm`, and `--judge` of `gtsteer eval judge`) as a
model string (`local:smollm2-135m`), `pairwise:<model>`, `embed` / `embed:<sentence-
transformers name or folder>` or `parse` (`make_classifier`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from gtsteer.binding import DomainSpec
from gtsteer.binding.progress import GatherBar
from gtsteer.evals.calibration import calibrated_best, label_priors
from gtsteer.evals.prompts import (
    DEFINED,
    Readable,
    classifier_prompt,
    options_of,
    pairwise_prompt,
)
from gtsteer.llm import LLM, ChoiceResult, as_llm

EMBED_PREFIX, PAIRWISE_PREFIX, PARSE = "embed", "pairwise:", "parse"
#: What `ParseClassifier` predicts for a message that states none of the key's values.
NO_VALUE = "(none)"


class Classification(BaseModel):
    """One message's classification: `predicted` (calibrated where the classifier calibrates),
    the raw argmax, the raw score per option and the content-free prior (None: not
    calibrated)."""

    predicted: str
    predicted_uncalibrated: str
    scores: dict[str, float]
    prior: dict[str, float] | None = None


class SteeringClassifier(Protocol):
    #: How reports name the classifier: the model string, `pairwise:<model>` or
    #: `embed:<embedder>`.
    name: str

    async def classify(
        self, spec: Readable, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Classification]:
        """One classification per (speaker, message), in order."""
        ...


class LoglikClassifier:
    """argmax_z P(z | message) over the key's values, calibrated on content-free messages."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = llm.model

    async def classify(
        self, spec: Readable, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Classification]:
        options = options_of(spec, key)

        async def score(speaker: str, message: str) -> ChoiceResult:
            prompt = classifier_prompt(spec, key, speaker, message, variant == DEFINED)
            return await self.llm.choose(prompt, options, seed=0)

        # The label prior depends on the prompt around the message: here, the speaker.
        speakers = [(s,) for s in dict.fromkeys(s for s, _ in items)]
        priors = await label_priors(score, speakers, bar, lambda _: options)
        results = await bar.gather("classify", [score(s, m) for s, m in items])
        out = []
        for (speaker, _), result in zip(items, results, strict=True):
            prior = priors[(speaker,)]
            best = result.choice if prior is None else calibrated_best(options, result.scores,
                                                                       prior)
            out.append(Classification(predicted=best, predicted_uncalibrated=result.choice,
                                      scores=result.scores, prior=prior))
        return out


class PairwiseClassifier:
    """Round-robin over value pairs: each pair a calibrated two-way choice, most wins wins."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = PAIRWISE_PREFIX + llm.model

    async def classify(
        self, spec: Readable, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Classification]:
        options = options_of(spec, key)
        pairs = list(itertools.combinations(options, 2))

        async def score(speaker: str, a: str, b: str, message: str) -> ChoiceResult:
            prompt = pairwise_prompt(spec, key, speaker, message, (a, b), variant == DEFINED)
            return await self.llm.choose(prompt, [a, b], seed=0)

        speakers = list(dict.fromkeys(s for s, _ in items))
        contexts = [(s, a, b) for s in speakers for a, b in pairs]
        priors = await label_priors(score, contexts, bar, lambda c: list(c[1:]))
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
            out.append(Classification(predicted=best, predicted_uncalibrated=raw, scores=wins,
                                      prior={o: 0.0 for o in options} if calibrated else None))
        return out


class EmbeddingClassifier:
    """Nearest value text by cosine similarity of sentence embeddings.

    Without definitions a value's text is its name ("Tuesday", "pathos"); with them it is
    "name: definition". The message is embedded as it is."""

    def __init__(self, embedder: str | None = None) -> None:
        from gtsteer.llm.embed import get_embedder

        self.embedder = get_embedder(embedder, strict=True)
        self.name = f"{EMBED_PREFIX}:{self.embedder.name}"

    def value_texts(self, spec: Readable, key: str, variant: str) -> list[str]:
        options = options_of(spec, key)
        if variant != DEFINED:
            return options
        defs = spec.instruction_definitions[key]
        return [f"{o}: {defs[o]}" for o in options]

    async def classify(
        self, spec: Readable, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Classification]:
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
            out.append(Classification(predicted=best, predicted_uncalibrated=best, scores=scores))
        return out


class ParseClassifier:
    """The value the domain's own parser reads in the message (`Domain.parse_message`), or
    `NO_VALUE`: exact, so calibration and definitions change nothing (both variants read the
    same). Its scores are 1 for the value read, 0 for the others."""

    name = PARSE

    async def classify(
        self, spec: Readable, key: str, items: Sequence[tuple[str, str]], variant: str,
        bar: GatherBar,
    ) -> list[Classification]:
        parse = spec.hooks.parse_message
        if parse is None or not isinstance(spec, DomainSpec):  # a LabelSpace has no parser
            # "judge:" names the option that spells it (`--judge`, as `--classifier-llm`)
            raise ValueError(f"judge: {cannot_read(self, spec)}")
        options = options_of(spec, key)
        out = []
        for _, message in items:
            value = parse(spec, key, message)
            best = value if value in options else NO_VALUE
            scores = {o: float(o == best) for o in options}
            out.append(Classification(predicted=best, predicted_uncalibrated=best, scores=scores))
        return out


def cannot_read(classifier: SteeringClassifier, spec: Readable) -> str | None:
    """Why `classifier` cannot classify any message of `spec`, or None: asked before a run
    generates its messages, so a refusal costs no model call."""
    if isinstance(classifier, ParseClassifier) and spec.hooks.parse_message is None:
        return (f"`{PARSE}` reads messages with the domain's parser, and domain "
                f"`{spec.hooks.name or spec.name}` has none (Domain.parse_message)")
    return None


#: Classifiers built around one language model (`.llm`): a Ray worker rebuilds them around
#: its own client of that model. Any other (an embedding classifier) classifies in the driver.
MODEL_CLASSIFIERS = (LoglikClassifier, PairwiseClassifier)


def names_a_classifier(spec: str | LLM | SteeringClassifier) -> bool:
    """Whether `spec` is a classifier (or a classifier's spelling) rather than a model that
    classifies by its calibrated likelihoods: then it plays no model role of the run."""
    if isinstance(spec, LLM):
        return False
    if not isinstance(spec, str):
        return True
    return spec in (EMBED_PREFIX, PARSE) or spec.startswith((EMBED_PREFIX + ":", PAIRWISE_PREFIX))


def make_classifier(spec: str | LLM | SteeringClassifier) -> SteeringClassifier:
    """A classifier from its command-line spelling (see the module docstring), or as given."""
    if isinstance(spec, LLM):
        return LoglikClassifier(spec)
    if not isinstance(spec, str):
        return spec
    if spec == PARSE:
        return ParseClassifier()
    if spec == EMBED_PREFIX or spec.startswith(EMBED_PREFIX + ":"):
        return EmbeddingClassifier(spec.partition(":")[2] or None)
    if spec.startswith(PAIRWISE_PREFIX):
        model = spec[len(PAIRWISE_PREFIX):]
        if not model:
            # "judge:" names the option that spells it (`--judge`, as `--classifier-llm`)
            raise ValueError("judge: `pairwise:` needs a model, e.g. pairwise:local:smollm2-135m")
        return PairwiseClassifier(as_llm(model))
    return LoglikClassifier(as_llm(spec))


def classifier_models(classifier: SteeringClassifier) -> list[LLM]:
    """The language models a classifier calls (for metering); none for an embedding one."""
    llm = getattr(classifier, "llm", None)
    return [llm] if isinstance(llm, LLM) else []
