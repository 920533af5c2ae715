"""`Domain`: everything a dialogue domain says in code, as one frozen record.

A config names its domain (`domain: fruit_trade`); whoever loads the config looks the record
up once (`gtsteer.domains.get_domain`) and binds it to the spec (`DomainSpec.with_domain`),
and the binding reads the hooks from there (`spec.hooks`). So binding code receives a domain
and never imports one (DESIGN.md), and a new domain is one `Domain(...)` plus its YAML.

Every hook is optional: a spec that names no domain is played with the `GENERIC` record
(private information sampled from the YAML's examples, payoffs from the reward LLM).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from gtsteer.binding.instances import Instance
    from gtsteer.binding.reward import RewardContext
    from gtsteer.binding.reward_cases import CaseWriter
    from gtsteer.binding.spec import DomainSpec


class DomainParams(BaseModel):
    """Base of a domain's `params` model: unknown keys are refused, each default is written once
    (on the field). `of(spec)` reads a spec's params through the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def of(cls, spec: DomainSpec) -> Self:
        return cls.model_validate(spec.params)


class FreeParams(DomainParams):
    """Any keys: for domains that read no params, or read them themselves."""

    model_config = ConfigDict(extra="allow", frozen=True)


#: (spec, rng, player index, names) -> that player's private info, key -> text.
PrivateInfoGenerator = Callable[["DomainSpec", random.Random, int, list[str]], dict[str, str]]
#: (spec, rng, names) -> every player's private info at once, for facts drawn together
#: (a debate's topic and its two opposite stances).
JointPrivateInfoGenerator = Callable[
    ["DomainSpec", random.Random, list[str]], list[dict[str, str]]
]
#: (spec, deal 0, j) -> every player's private info in deal j, for domains whose deals must
#: cover a prior exactly (each hidden type equally often) rather than draw it.
DealGenerator = Callable[["DomainSpec", "Instance", int], list[dict[str, str]]]
#: async (terminal + reward LLM) -> one payoff per player, computed exactly.
Utility = Callable[["RewardContext"], Awaitable[list[float]]]
#: (spec, instance) -> (lowest, highest) payoff any legal outcome of that instance can give;
#: replaces the config's payoff.min/max, so no legal outcome is ever clipped.
Bounds = Callable[["DomainSpec", "Instance"], tuple[float, float]]
#: spec -> None, raising ValueError("field `x`: ...") or DomainCheckError for a spec the
#: domain cannot run (player count, payoff bounds); run once, when the spec is bound.
Validator = Callable[["DomainSpec"], None]
#: (spec, instance) -> None, raising DomainCheckError for an instance written by someone other
#: than the domain's own generator (an LLM) that the utility could not read.
InstanceCheck = Callable[["DomainSpec", "Instance"], None]
#: (spec, one player's private info) -> numbers, the same length for every player
#: (appended to the generic features by gtsteer.imitation).
PrivateFeatures = Callable[["DomainSpec", dict[str, str]], list[float]]
#: (spec, one player's private info) -> the instruction a person would give that player
#: without a solver, as action key -> value (keys left out: "any"); the `greedy` baseline of
#: the fresh-sample measure (`gtsteer.solvers.heldout`).
GreedyChoice = Callable[["DomainSpec", dict[str, str]], dict[str, str]]
#: (spec, one player's private info, the messages so far) -> the instruction a person who has
#: read them would give that player, as `GreedyChoice`; the greedy baseline at every decision
#: after the first message (`greedy` where unset), e.g. a reply that accepts a good proposal.
ReplyChoice = Callable[["DomainSpec", dict[str, str], list[str]], dict[str, str]]
#: (spec, action key, one message) -> the value of that key the message states, read exactly
#: in code (an offer's counts and fruits), or None where it states none; the steering
#: classifier `parse` of `gtsteer eval steering` (`gtsteer.evals.classifiers`).
MessageParser = Callable[["DomainSpec", str, str], "str | None"]

#: Left out of `Domain.fingerprint`: a baseline's choice, or how a message is read to measure
#: steering, does not change the game.
_NOT_IN_GAME = frozenset({"name", "greedy", "reply_greedy", "parse_message", "version"})


def is_domain_reference(name: str) -> bool:
    """True where a config's `domain:` is a `module:ATTRIBUTE` reference, which names a record
    by where it lives (a registered name has no colon)."""
    return ":" in name


#: async (a finished dialogue + the reward LLM) -> what it agreed, in the domain's own terms
#: (fruit by offer: who gives what, players in name order), None where nothing was agreed.
AgreementReader = Callable[["RewardContext"], Awaitable[Any]]


@dataclass(frozen=True)
class AgreementReading:
    """How a domain reads *what* a dialogue agreed, so that `gtsteer eval reward --labelled`
    can score each way of reading it on hand-labelled dialogues."""

    #: spec -> its readings by name, the one the config pays by first (fruit by offer:
    #: `exact` and `ask`, in the order `params.agreement` puts them).
    readers: Callable[[DomainSpec], dict[str, AgreementReader]]
    #: (spec, a labelled item's `agreed` value, who speaks first) -> the outcome in the readers'
    #: terms; a ValueError says what is wrong with the label.
    label: Callable[[DomainSpec, Any, int], Any]
    #: (player names, an outcome other than None) -> how a report shows it.
    describe: Callable[[list[str], Any], str]


@dataclass(frozen=True)
class RewardCases:
    """Templated transcripts with known payoffs (`gtsteer eval reward`): the writer, the
    payoff rule in words for the path on which the LLM computes the payoffs itself, and how
    the domain reads what was agreed, for hand-labelled dialogues (None: it cannot say)."""

    writer: CaseWriter
    payoff_rule: str
    agreement: AgreementReading | None = None


@dataclass(frozen=True)
class Domain:
    """One dialogue domain's code. `name` is what a config's `domain:` key says."""

    name: str
    #: Validates the config's `params` (errors name `params.<field>`).
    params: type[DomainParams] = FreeParams
    private_info: PrivateInfoGenerator | None = None
    joint_private_info: JointPrivateInfoGenerator | None = None
    deals: DealGenerator | None = None
    utility: Utility | None = None
    bounds: Bounds | None = None
    validate: Validator | None = None
    instance_check: InstanceCheck | None = None
    features: PrivateFeatures | None = None
    reward_cases: RewardCases | None = None
    greedy: GreedyChoice | None = None
    reply_greedy: ReplyChoice | None = None
    parse_message: MessageParser | None = None
    #: Raised when the domain's code pays the same transcripts differently (a new payoff
    #: rule): it is part of `fingerprint`, so solved records saved under the old rule are
    #: solved again (`gtsteer solve`'s resume key), while the model's cached answers, which
    #: the rule only reads, stay valid.
    version: int = 1

    def __post_init__(self) -> None:
        if self.private_info is not None and self.joint_private_info is not None:
            raise ValueError(f"domain {self.name!r}: give private_info or joint_private_info")
        if self.bounds is not None and self.utility is None:
            raise ValueError(f"domain {self.name!r}: bounds without a utility bound nothing")

    @property
    def generates_private_info(self) -> bool:
        return self.private_info is not None or self.joint_private_info is not None

    def fingerprint(self) -> str:
        """The name, its `version` and which hooks are set: tells apart two records of one name
        (a domain and its copy without the utility, `gtsteer eval reward`'s free path) in a game
        key. Version 1 is left out, so a domain never re-versioned keeps the keys it had."""
        hooks = [f.name for f in fields(self)
                 if f.name not in _NOT_IN_GAME and getattr(self, f.name)]
        version = "" if self.version == 1 else f"@{self.version}"
        return f"{self.name}{version}[{','.join(hooks)}]"

    def without_utility(self) -> Domain:
        """The same domain paid by the reward LLM instead of its exact utility."""
        return replace(self, utility=None, bounds=None)


#: The record of a spec that names no domain.
GENERIC = Domain(name="")
