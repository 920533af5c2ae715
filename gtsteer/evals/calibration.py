"""Contextual calibration of a likelihood classifier (Zhao et al. 2021).

Small models put most of P(z | message) on whichever label they like best, whatever the
message (Gemma 3 270M answers "assertive" for every message, unguided ones included). The
label prior is estimated from content-free messages ("" and "N/A") in the same prompt, and a
prediction is argmax_z [log P(z | message) - log P(z | no message)], which is
argmax_z P(message | z) under a uniform prior. A backend that makes a constrained choice
(API models: no likelihoods) gets no prior, and its choice is taken as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from gtsteer.binding.progress import GatherBar
from gtsteer.llm import ChoiceResult

#: Content-free messages whose mean scores estimate the classifier's label prior.
NULL_MESSAGES = ("", "N/A")
#: `ChoiceResult.method`s whose scores are likelihoods (or stand in for them), so calibrate.
CALIBRATED_METHODS = ("loglik", "hash")


def calibrated_best(options: list[str], scores: dict[str, float], prior: dict[str, float]) -> str:
    """argmax_z [score(z) - prior(z)]; of equals, the first option."""
    return max(options, key=lambda o: scores[o] - prior[o])  # max keeps the first of equals


async def label_priors(
    score: Callable[..., Awaitable[ChoiceResult]],
    contexts: Sequence[tuple[str, ...]],
    bar: GatherBar,
    options_for: Callable[[tuple[str, ...]], list[str]],
) -> dict[tuple[str, ...], dict[str, float] | None]:
    """Mean score of each option over the content-free messages, per prompt context
    (`score(*context, message)`); None where the backend made a constrained choice (no
    likelihoods to calibrate)."""
    nulls = [(c, m) for c in contexts for m in NULL_MESSAGES]
    found: list[ChoiceResult] = await bar.gather(
        "calibrate", [score(*c, m) for c, m in nulls]
    )
    priors: dict[tuple[str, ...], dict[str, float] | None] = {}
    for context in contexts:
        results = [r for (c, _), r in zip(nulls, found, strict=True) if c == context]
        if all(r.method in CALIBRATED_METHODS for r in results):
            priors[context] = {
                o: float(np.mean([r.scores[o] for r in results])) for o in options_for(context)
            }
        else:
            priors[context] = None
    return priors
