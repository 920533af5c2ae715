"""Structured features of a player's private information, provided by the domain.

Text embeddings may miss what a domain knows exactly (fruit counts and values, preferred days).
A domain whose private information it generates can give `Domain.features`, a function that
turns one player's private info into numbers; `gtsteer.imitation` appends them to the generic
features (turn, own past instructions). Fixed length per spec.
"""

from __future__ import annotations

from gtsteer.binding.spec import DomainSpec


def private_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """The domain's features of `info`; [] when the domain has none."""
    fn = spec.hooks.features
    return [] if fn is None else [float(x) for x in fn(spec, info)]
