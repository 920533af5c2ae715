"""Instances of a domain: names, private information and opening message, from (spec, seed).

Deterministic in any process: every random draw comes from `random.Random` seeded by a SHA-256
of (domain name, seed, index) and iterates lists in their written order, never a set or dict
whose order could depend on PYTHONHASHSEED.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from pydantic import BaseModel

from gtsteer.binding.prompts import fill_template, join_names
from gtsteer.binding.spec import DomainSpec


def stable_int(*parts: Any, bits: int = 31) -> int:
    """A process-independent integer from JSON-serialisable parts (unlike `hash()`)."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "big") % (1 << bits)


def _draw_private_info(
    spec: DomainSpec, rng: random.Random, names: list[str]
) -> list[dict[str, str]]:
    domain = spec.hooks
    if domain.joint_private_info is not None:
        private = [dict(info) for info in domain.joint_private_info(spec, rng, names)]
        if len(private) != spec.num_players:
            raise ValueError(
                f"domain {domain.name!r} returned {len(private)} players' private info"
            )
        return private
    if domain.private_info is not None:
        gen = domain.private_info
        return [dict(gen(spec, rng, p, names)) for p in range(spec.num_players)]
    return [
        {key: rng.choice(examples) for key, examples in spec.private_examples(p).items()}
        for p in range(spec.num_players)
    ]


class Instance(BaseModel):
    """One procedurally generated game of a domain (or one deal of a dealt game)."""

    index: int
    #: Seeds the LLM samples; shared by every deal of an instance, so a message depends only on
    #: what its speaker knows (own private info, transcript, own instruction), never on the deal.
    seed: int
    names: list[str]
    private_info: list[dict[str, str]]
    opening: str | None = None
    scenario: str
    #: Which private-information draw this is (0: the instance's own; see `deal_instances`).
    deal: int = 0

    def other_names(self, player: int) -> list[str]:
        return [n for i, n in enumerate(self.names) if i != player]


def make_instance(spec: DomainSpec, index: int, seed: int = 0) -> Instance:
    """Instance `index` of the run seeded `seed`; independent of how many others are made."""
    inst_seed = stable_int("gtsteer-instance", spec.name, seed, index)
    rng = random.Random(inst_seed)
    names = rng.sample(list(dict.fromkeys(spec.names)), spec.num_players)
    private = _draw_private_info(spec, rng, names)
    fields = name_fields(names)
    return Instance(
        index=index,
        seed=inst_seed,
        names=names,
        private_info=private,
        scenario=fill_template(spec.scenario, fields).strip(),
        opening=None if spec.opening is None else fill_template(spec.opening, fields).strip(),
    )


def deal_instances(spec: DomainSpec, instance: Instance) -> list[Instance]:
    """The `spec.num_deals` deals of a dealt game: deal 0 is `instance` itself, deal j > 0
    keeps its public part (names, scenario, opening, sample seed) and gets other private
    information, so the public transcript never tells the deals apart. That information is
    drawn afresh, unless the domain has a deal generator (`Domain.deals`)."""
    deals = [instance]
    make_deal = spec.hooks.deals
    for j in range(1, spec.num_deals):
        if make_deal is not None:
            private = [dict(info) for info in make_deal(spec, instance, j)]
        else:
            rng = random.Random(stable_int("gtsteer-deal", spec.name, instance.seed, j))
            private = _draw_private_info(spec, rng, list(instance.names))
        deals.append(instance.model_copy(update={"private_info": private, "deal": j}))
    return deals


def name_fields(names: list[str]) -> dict[str, str]:
    fields = {f"name{i}": n for i, n in enumerate(names)}
    fields["players"] = join_names(names)
    return fields


def generate_instances(spec: DomainSpec, num: int, seed: int = 0) -> list[Instance]:
    """The first `num` instances of the run seeded `seed`."""
    if num < 0:
        raise ValueError("num must be >= 0")
    return [make_instance(spec, i, seed) for i in range(num)]


__all__ = [
    "Instance",
    "deal_instances",
    "generate_instances",
    "make_instance",
    "stable_int",
]
