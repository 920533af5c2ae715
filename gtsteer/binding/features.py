"""Structured features of a player's private information, provided by the domain.

Text embeddings may miss what a domain knows exactly (fruit counts and values, preferred days).
A domain whose private information comes from a registered generator can register a function
under the same name that turns one player's private info into numbers; `gtsteer.imitation`
appends them to the generic features (turn, own past instructions). Fixed length per spec.
"""

from __future__ import annotations

from collections.abc import Callable

from gtsteer.binding.instances import lookup
from gtsteer.binding.spec import DomainSpec

#: (spec, one player's private info key -> text) -> numbers, the same length for every player.
PrivateFeatures = Callable[[DomainSpec, dict[str, str]], list[float]]
_FEATURES: dict[str, PrivateFeatures] = {}


def register_private_features(name: str) -> Callable[[PrivateFeatures], PrivateFeatures]:
    """Register features for private info made by the generator called `name`."""

    def deco(fn: PrivateFeatures) -> PrivateFeatures:
        _FEATURES[name] = fn
        return fn

    return deco


def private_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """The domain's features of `info`; [] when the domain registers none."""
    name = spec.private_info_generator
    if name is None:
        return []
    try:
        fn = lookup(_FEATURES, name, "private-features function")
    except KeyError:
        return []
    return [float(x) for x in fn(spec, info)]
