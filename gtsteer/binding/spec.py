"""`DomainSpec`: a dialogue domain as data, validated before any LLM call.

A new domain is a YAML file (and, only for an exact utility, a small Python function). Every
template placeholder and every instruction set is checked at load time, so a typo fails with
the file and the field named instead of surfacing as a strange prompt hours into a run.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from gtsteer.binding.domain import GENERIC, is_domain_reference
from gtsteer.binding.run_models import RunModels
from gtsteer.binding.shipped import missing_config_message, resolve_config

if TYPE_CHECKING:
    from gtsteer.binding.domain import Domain

ANY = "any"
#: Root chance outcomes of a dealt game; each multiplies the tree (and the LLM calls).
MAX_DEALS = 256
#: LLM samples of one message (chance outcomes of one chance node).
Samples = Annotated[int, Field(gt=0, le=64)]
_ONE_COUNT, _PER_DEPTH = TypeAdapter(Samples), TypeAdapter(list[Samples])
#: `private_info`'s two shapes: key -> examples for every player, or role -> its own keys.
SharedInfo = dict[str, list[str]]
RoleInfo = dict[str, dict[str, list[str]]]
_SHARED_INFO, _ROLE_INFO = TypeAdapter(SharedInfo), TypeAdapter(RoleInfo)

#: Placeholders each template may use (filled by gtsteer.binding.prompts).
MESSAGE_FIELDS = frozenset(
    {"scenario", "name", "other", "players", "private_info", "transcript", "instruction"}
)
REWARD_FIELDS = frozenset({"scenario", "players", "private_info_all", "transcript"})
TERMINATION_FIELDS = frozenset({"scenario", "players", "transcript"})
SCENARIO_FIELDS = frozenset({"players", "name0", "name1", "name2", "name3", "name4", "name5"})
INSTRUCTION_FIELDS = frozenset({"name", "value", "key"})
JUDGE_FIELDS = frozenset({"scenario", "players", "transcript", "options"})

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
#: Values a config may hold once YAML aliases are expanded: far above any real config, far
#: below an alias bomb (a 3 KB file can stand for 10^8 values).
MAX_CONFIG_VALUES = 100_000
#: The largest config file read: the shipped ones are 2-4 KB; a 50 MB file took 30 s to parse
#: before it was refused for its fields.
MAX_CONFIG_BYTES = 1024 * 1024


class ConfigError(ValueError):
    """A domain config is unusable; the message names the file and the field."""


def placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template))


def _templates(allowed: frozenset[str]) -> AfterValidator:
    """Checks a template field (one template, a list or a mapping of them; None: unset) for
    placeholders outside `allowed`."""

    def check(v: Any) -> Any:
        for template in v.values() if isinstance(v, dict) else v if isinstance(v, list) else [v]:
            if template is not None:
                _check_fields(template, allowed)
        return v

    return AfterValidator(check)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PayoffSpec(_Strict):
    #: Finite: an infinite bound cannot normalise a metric (and JSON has no infinity).
    min: float = Field(allow_inf_nan=False)
    max: float = Field(allow_inf_nan=False)
    #: The reward prompt: both players' payoffs (or, with a utility, the extraction prompt).
    prompt: Annotated[str, _templates(REWARD_FIELDS)]
    #: Payoffs are centred to sum to zero (the game is then declared ZERO_SUM to OpenSpiel);
    #: a centred vector outside the bounds is scaled down as a whole, so it still sums to zero.
    zero_sum: bool = False
    max_tokens: int = Field(64, gt=0, le=4096)

    @model_validator(mode="after")
    def _bounds(self) -> PayoffSpec:
        if not self.min < self.max:
            raise ValueError(f"payoff.min ({self.min}) must be below payoff.max ({self.max})")
        if self.zero_sum and self.min != -self.max:
            raise ValueError("a zero-sum payoff needs symmetric bounds (min == -max)")
        return self

    @property
    def span(self) -> float:
        """max - min: the unit of every normalised number (`solvers.metrics.normalized`)."""
        return self.max - self.min


class GenerationSettings(_Strict):
    max_tokens: int = Field(48, gt=0, le=4096)
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    #: Extra stop strings; "\n\n" and every "\n<Name>:" speaker tag are always added.
    stop: list[str] = Field(default_factory=list)


class JudgeSpec(_Strict):
    """A fixed, non-strategic classifier asked after every round (verdict games).

    It picks one of `verdicts` (the game ends) or `continue_label` (it goes on) through
    `LLM.choose`; after the last round it must pick a verdict. The verdict reaches the utility
    as `RewardContext.verdict`."""

    prompt: Annotated[str, _templates(JUDGE_FIELDS)]
    verdicts: list[str] = Field(min_length=2)
    continue_label: str = "continue"
    #: 0: the most likely option; above 0: sampled from softmax(scores / temperature) with a
    #: seed fixed by the history, so the judge stays a function of the transcript.
    temperature: float = Field(0.0, ge=0.0, le=5.0)
    #: Other wordings of the same judge, for robustness checks (`gtsteer eval verdict`).
    alternative_prompts: Annotated[list[str], _templates(JUDGE_FIELDS)] = Field(
        default_factory=list)

    @model_validator(mode="after")
    def _labels(self) -> JudgeSpec:
        if len(set(self.verdicts)) != len(self.verdicts):
            raise ValueError(f"verdicts {self.verdicts} has duplicates")
        if self.continue_label in self.verdicts:
            raise ValueError(f"continue_label `{self.continue_label}` is also a verdict")
        return self

    @property
    def prompts(self) -> list[str]:
        """The judge's prompt followed by its alternative wordings."""
        return [self.prompt, *self.alternative_prompts]


#: The longest `psro.examples` value: PSRO drops longer proposals as rambling
#: (`gtsteer.solvers.psro.candidates.MAX_INSTRUCTION_CHARS`), so a longer example would teach it.
MAX_PSRO_EXAMPLE_CHARS = 60


class PSROSpec(_Strict):
    """What PSRO's proposer is shown of this domain besides its scenario and population."""

    #: Example values of the key PSRO grows, shown to the proposer as values of the kind it
    #: should propose (two per call, chosen by the call's seed, none already in the
    #: population). Empty: the population itself is the example (as OpenSpiel's
    #: list-continuation prompt). Tone configs list tones here; a day config need not.
    examples: list[str] = Field(default_factory=list)

    @field_validator("examples")
    @classmethod
    def _examples(cls, v: list[str]) -> list[str]:
        for value in v:
            if not value.strip() or "|" in value or "=" in value:
                raise ValueError(f"example {value!r} is empty or has | or =")
            if value.strip().lower() == ANY:
                raise ValueError(f'"{ANY}" is the unguided baseline, not an example')
            if len(value) > MAX_PSRO_EXAMPLE_CHARS:
                raise ValueError(f"example {value!r} is longer than {MAX_PSRO_EXAMPLE_CHARS} "
                                 "characters (PSRO drops such proposals)")
        if len({x.strip().lower() for x in v}) != len(v):
            raise ValueError(f"examples {v} has duplicates")
        return v


class DomainSpec(_Strict):
    """Everything that defines a dialogue domain; see gtsteer/configs/trade_fruit_tone.yaml."""

    name: str = Field(min_length=1)
    description: str = ""
    #: Role labels, one per player (2 or more).
    players: list[str] = Field(min_length=2)
    #: Names drawn for instances (at least one per player).
    names: list[str] = Field(min_length=2)
    #: Instruction sets: key -> choices; each must include "any" (the unguided baseline).
    actions: dict[str, list[str]] = Field(min_length=1)
    #: How a chosen value is said to the model, per key ("{name} speaks in a {value} tone.").
    instruction_templates: Annotated[dict[str, str], _templates(INSTRUCTION_FIELDS)] = Field(
        default_factory=dict)
    #: Optional one-line definitions of instruction values, per key (`any` excluded); the
    #: steering classifier of `gtsteer eval steering` is scored with and without them.
    #: A defined key defines every value but PSRO's `grown` ones; a key is measured with
    #: definitions only when every one of its values has one.
    instruction_definitions: dict[str, dict[str, str]] = Field(default_factory=dict)
    #: The `Domain` whose code plays this spec (`gtsteer.domains`: generators, exact utility,
    #: checks); none: private info sampled from `private_info`, payoffs from the reward LLM.
    domain: str | None = None
    #: Private information (drawn when the domain generates none): key -> example values, one
    #: drawn for each player; or, keyed by the roles of `players`, each player's own keys, each
    #: a fixed text or a list to draw from (`seller: {lowest_price: "$300"}`).
    private_info: SharedInfo | RoleInfo = Field(default_factory=dict)
    #: Parameters for the domain's code, validated by its `params` model (e.g. the fruit list).
    params: dict[str, Any] = Field(default_factory=dict)
    #: The situation, shown at the top of every prompt; may use {name0}, {name1}, {players}.
    scenario: Annotated[str, _templates(SCENARIO_FIELDS)]
    #: Optional opening message said by player `opening_speaker` before any decision.
    opening: Annotated[str | None, _templates(SCENARIO_FIELDS)] = None
    opening_speaker: int = Field(0, ge=0)
    message_prompt: Annotated[str, _templates(MESSAGE_FIELDS)]
    termination_prompt: Annotated[str | None, _templates(TERMINATION_FIELDS)] = None
    #: Verdict games: a classifier after every round instead of a termination prompt.
    judge: JudgeSpec | None = None
    #: LLM samples per message: one count for every message, or one per depth (`[8, 2]`: 8
    #: samples of the first sampled message, 2 of each later one; the last entry repeats).
    num_llm_seeds: int | list[int]
    num_max_replies: int = Field(gt=0, le=16)
    #: Optional: the action keys each message may set, in order (every other key stays `any`);
    #: a dialogue then has at most `len(turns)` messages. `[[day], [reply], [last]]`: the
    #: opening names a day, the reply and the last message choose from their own sets. Action
    #: ids stay those of the whole list, so only the legal actions differ by turn.
    turns: list[list[str]] | None = None
    #: 1: each generated instance is its own game (every private fact is known to the solver).
    #: K > 1: one game whose root chance node deals one of K private-information draws sharing
    #: the instance's public part, so each player's strategy sees only its own private info.
    num_deals: int = Field(1, ge=1, le=MAX_DEALS)
    payoff: PayoffSpec
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    #: What `gtsteer psro`'s proposer is shown (`psro.examples`).
    psro: PSROSpec = Field(default_factory=PSROSpec)
    #: (key, value) pairs appended at run time by `with_added_instruction` (PSRO), in order.
    #: Their instructions come after all earlier ones, so no existing action id ever changes.
    grown: list[tuple[str, str]] = Field(default_factory=list)
    #: Optional model per role of a run (`gtsteer.binding.run_models`); run settings, not the
    #: game, so excluded from dumps (game keys and hashes stay those of the game alone).
    models: RunModels | None = Field(None, exclude=True)
    #: The `Domain` record bound by `with_domain` (never dumped: the config holds its name).
    _domain: Domain | None = PrivateAttr(default=None)

    @field_validator("num_llm_seeds", mode="wrap")
    @classmethod
    def _seeds_per_depth(cls, v: Any, _handler: ValidatorFunctionWrapHandler
                         ) -> int | list[int]:
        # one validation per shape, so an error names the field (and the entry), not the
        # union's members
        if not isinstance(v, list):
            return _ONE_COUNT.validate_python(v)
        if not v:
            raise ValueError("give a count, or one count per message depth (e.g. [8, 2])")
        return _PER_DEPTH.validate_python(v)

    @field_validator("private_info", mode="wrap")
    @classmethod
    def _private_info_shape(cls, v: Any, _handler: ValidatorFunctionWrapHandler,
                            info: ValidationInfo) -> SharedInfo | RoleInfo:
        # one shape at a time, so an error names the entry rather than the union's members
        if not isinstance(v, dict) or not any(isinstance(x, dict) for x in v.values()):
            return _SHARED_INFO.validate_python(v)
        if not all(isinstance(x, dict) for x in v.values()):
            raise ValueError("give key -> examples for every player, or each role of `players`"
                             " -> its own keys, not both")
        roles = info.data.get("players")
        unknown = [r for r in v if roles is not None and r not in roles]
        if unknown:
            raise ValueError(f"no role {', '.join(f'`{r}`' for r in unknown)} in `players`"
                             f" {roles}; key each player's own notes by its role")
        bad = [InitErrorDetails(type=PydanticCustomError("notes", "give a text or a list of"
                                                         " texts"), loc=(r, k), input=x)
               for r, keys in v.items() for k, x in keys.items() if not isinstance(x, str | list)]
        if bad:
            raise ValidationError.from_exception_data("private_info", bad)
        return _ROLE_INFO.validate_python(  # a fixed text is the one example to draw
            {r: {k: [x] if isinstance(x, str) else x for k, x in keys.items()}
             for r, keys in v.items()})

    @field_validator("actions")
    @classmethod
    def _actions_have_any(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for key, values in v.items():
            if not values:
                raise ValueError(f"instruction set `{key}` is empty")
            if ANY not in values:
                raise ValueError(f'instruction set `{key}` must include "{ANY}" (the baseline)')
            if len(set(values)) != len(values):
                raise ValueError(f"instruction set `{key}` has duplicate entries")
            for value in values:
                if not value.strip() or "|" in value or "=" in value:
                    raise ValueError(f"instruction `{value}` in `{key}` is empty or has | or =")
        return v

    @model_serializer(mode="wrap")
    def _without_unset_turns(self, handler: SerializerFunctionWrapHandler) -> Any:
        # a spec without `turns` dumps as before the field existed: its game and run keys
        # (hashes of the dump) stay the same, and so do saved runs resumed by them
        data = handler(self)
        if self.turns is None and isinstance(data, dict):
            data.pop("turns", None)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> DomainSpec:
        unknown = sorted(set(self.instruction_templates) - set(self.actions))
        if unknown:
            raise ValueError(f"instruction_templates names unknown action keys {unknown}")
        self._check_definitions()
        if len(set(self.names)) < len(self.players):
            raise ValueError("`names` needs at least one distinct name per player")
        if self.opening is not None and self.opening_speaker >= len(self.players):
            raise ValueError("`opening_speaker` is not a player index")
        for key, value in self.grown:
            if value not in self.actions.get(key, []):
                raise ValueError(f"grown instruction {key}={value!r} is not in `actions`")
        if len(set(self.grown)) != len(self.grown):
            raise ValueError("`grown` lists an instruction twice")
        if self.judge is not None and self.termination_prompt is not None:
            raise ValueError("give `judge` or `termination_prompt`, not both")
        self._check_turns()
        if self.domain is None and self._empty_private_info():
            raise ValueError(f"private_info keys without examples: {self._empty_private_info()}")
        return self

    @property
    def per_role_info(self) -> bool:
        """Whether `private_info` gives each role its own keys (else: keys every player has)."""
        return any(isinstance(x, dict) for x in self.private_info.values())

    def private_examples(self, player: int) -> SharedInfo:
        """Player `player`'s private-information keys, each with the values to draw from."""
        if not self.per_role_info:
            return self.private_info  # type: ignore[return-value]
        return self.private_info.get(self.players[player], {})  # type: ignore[return-value]

    def _empty_private_info(self) -> list[str]:
        if not self.per_role_info:
            return sorted(k for k, v in self.private_info.items() if not v)
        return sorted(f"{r}.{k}" for r, keys in self.private_info.items()
                      for k, v in keys.items() if not v)  # type: ignore[union-attr]

    def _check_turns(self) -> None:
        if self.turns is None:
            return
        limit = self.num_max_replies * self.num_players
        if not 0 < len(self.turns) <= limit:
            raise ValueError(f"turns: {len(self.turns)} messages, but a dialogue has 1 to"
                             f" num_max_replies x players = {limit}")
        for i, keys in enumerate(self.turns):
            for key in keys:
                if key not in self.actions:
                    raise ValueError(f"turns.{i}: `{key}` is not an action key"
                                     f" {self.action_keys}")
            if not keys:
                raise ValueError(f"turns.{i}: name at least one action key")

    def _check_definitions(self) -> None:
        """Keys must be action keys, texts non-empty, and a defined key must define exactly its
        values (a typo such as `asertive:` fails here). Only values PSRO appended at run time
        (`grown`) may lack a definition; `eval steering` then says what it could not use."""
        grown = set(self.grown)
        for key, defs in self.instruction_definitions.items():
            where = f"instruction_definitions.{key}"
            if key not in self.actions:
                raise ValueError(f"{where}: `{key}` is not an action key {self.action_keys}")
            if ANY in defs:
                raise ValueError(f"{where}: `{ANY}` is the unguided baseline, not an instruction")
            wanted = [v for v in self.actions[key] if v != ANY]
            unknown = sorted(set(defs) - set(wanted))
            if unknown:
                raise ValueError(f"{where}: defines {unknown}, which are not values of `{key}`"
                                 f" ({wanted})")
            missing = [v for v in wanted if v not in defs and (key, v) not in grown]
            if missing:
                raise ValueError(f"{where}: no definition for {missing}")
            empty = [v for v, text in defs.items() if not text.strip()]
            if empty:
                raise ValueError(f"{where}: empty definition for {empty}")

    # ---- the domain's code ----------------------------------------------------------------

    @property
    def hooks(self) -> Domain:
        """The bound `Domain` record (`GENERIC` for a spec that names none)."""
        if self._domain is not None:
            return self._domain
        if self.domain is None:
            return GENERIC
        raise ConfigError(
            f"spec `{self.name}` names domain `{self.domain}` but none is bound: load it with "
            "gtsteer.domains.load_spec / spec_from_dict (or call spec.with_domain(domain))"
        )

    def with_domain(self, domain: Domain, source: str = "<config>") -> DomainSpec:
        """This spec played by `domain`, after the domain's checks: `params` through its model,
        then its validator; a failure is a `ConfigError` naming the field. The one place a
        domain's spec checks run (a spec derived by `with_deals`/`with_added_instruction`
        is bound again, so its checks see the new values)."""
        if (self.domain is not None and not is_domain_reference(self.domain)
                and domain.name != self.domain):
            raise ConfigError(f"{source}: field `domain`: `{self.domain}` is not the domain "
                              f"given to play it (`{domain.name}`)")
        try:
            domain.params.model_validate(self.params)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {validation_summary(exc, ('params',))}") from None
        if not domain.generates_private_info and self._empty_private_info():
            raise ConfigError(f"{source}: field `private_info`: keys without examples "
                              f"{self._empty_private_info()} (domain `{domain.name}` generates"
                              " none)")
        if domain.generates_private_info and self.per_role_info:
            raise ConfigError(f"{source}: field `private_info`: domain `{domain.name}` generates"
                              " each player's private information; give examples (key ->"
                              " values), not each role's own notes")
        bound = self.model_copy()
        bound._domain = domain
        if domain.validate is not None:
            try:
                domain.validate(bound)
            except ValueError as exc:
                raise ConfigError(f"{source}: {exc}") from None
        return bound

    def _rebound(self, spec: DomainSpec, source: str) -> DomainSpec:
        return spec if self._domain is None else spec.with_domain(self._domain, source)

    # ---- derived ------------------------------------------------------------------------

    @property
    def num_players(self) -> int:
        return len(self.players)

    def samples_at(self, depth: int) -> int:
        """LLM samples of the message at `depth` (0: the first sampled message of a dialogue;
        a config's fixed `opening` is no sample). A per-depth list repeats its last entry."""
        seeds = self.num_llm_seeds
        if isinstance(seeds, int):
            return seeds
        return seeds[min(depth, len(seeds) - 1)]

    @property
    def max_llm_seeds(self) -> int:
        """The most samples of any message: the sample offset of a game whose samples are
        disjoint from this one's at every depth (fresh samples, `sample_offset`)."""
        seeds = self.num_llm_seeds
        return seeds if isinstance(seeds, int) else max(seeds)

    @property
    def reply_limit(self) -> int:
        """Messages after which a dialogue ends regardless of the termination check."""
        limit = self.num_max_replies * self.num_players
        return limit if self.turns is None else min(limit, len(self.turns))

    def end_check_after(self, replies: int) -> bool:
        """Whether the message that brings the count to `replies` gets an end check: the
        termination prompt before the reply limit; a verdict game's judge at every round end,
        the last one included (it then must give a verdict)."""
        if self.judge is not None:
            return replies % self.num_players == 0
        return self.termination_prompt is not None and replies < self.reply_limit

    def turn_keys(self, depth: int) -> list[str]:
        """The action keys the message at `depth` may set (every key without `turns`)."""
        return self.action_keys if self.turns is None else self.turns[depth]

    def legal_instructions(self, depth: int) -> list[int]:
        """The action ids the speaker of the message at `depth` may choose: those whose keys
        outside `turn_keys(depth)` are `any` (every action without `turns`)."""
        names = self.instructions()
        if self.turns is None:
            return list(range(len(names)))
        fixed = [k for k in self.action_keys if k not in self.turns[depth]]
        return [i for i, name in enumerate(names)
                if all(self.parse_instruction(name)[k] == ANY for k in fixed)]

    @property
    def action_keys(self) -> list[str]:
        return list(self.actions)

    def instructions(self) -> list[str]:
        """The action list: every action as a readable string ("assertive", or
        "tone=calm|day=Monday"); action id = index here. The one place action ids are made.

        The written values' combinations come first (in key order); each grown value then
        appends the combinations it creates, so adding a value never renumbers older actions.
        With `turns`, only combinations some message may choose are actions."""
        grown = set(self.grown)
        current = {k: [v for v in vals if (k, v) not in grown] for k, vals in self.actions.items()}
        combos = _combinations(current)
        for key, value in self.grown:
            current[key].append(value)
            combos += _combinations({**current, key: [value]})
        if self.turns is not None:  # only what some message may choose
            combos = [c for c in combos if any({k for k, v in c if v != ANY} <= set(keys)
                                               for keys in self.turns)]
        if len(self.actions) == 1:
            return [c[0][1] for c in combos]
        return ["|".join(f"{k}={v}" for k, v in c) for c in combos]

    def with_added_instruction(self, key: str, value: str) -> DomainSpec:
        """This spec with `value` appended to instruction set `key` (PSRO's growing action
        set): every existing instruction keeps its action id, so every cached LLM call of the
        old game stays valid in the new one."""
        if key not in self.actions:
            raise ConfigError(f"action key {key!r} does not exist; keys: {self.action_keys}")
        clean = " ".join(value.split())
        if not clean or "|" in clean or "=" in clean:
            raise ConfigError(f"instruction {value!r} for `{key}` is empty or has | or =")
        if clean == ANY or clean in self.actions[key]:
            raise ConfigError(f"instruction {clean!r} is already in `{key}`")
        data = self.model_dump()
        data["actions"] = {**self.actions, key: [*self.actions[key], clean]}
        data["grown"] = [*self.grown, (key, clean)]
        source = f"{self.name} + {key}={clean}"
        return self._rebound(parse_spec(data, source), source)

    def any_instruction(self) -> str:
        """The unguided baseline's action string (every key set to "any")."""
        if len(self.actions) == 1:
            return ANY
        return "|".join(f"{k}={ANY}" for k in self.actions)

    def with_deals(self, num_deals: int) -> DomainSpec:
        """The same spec with `num_deals` replaced (validated: `num_deals` is named on error)."""
        spec = parse_spec({**self.model_dump(), "num_deals": num_deals}, "--deals")
        return self._rebound(spec, "--deals")

    def parse_instruction(self, instruction: str) -> dict[str, str]:
        """Inverse of `instructions()`: key -> chosen value."""
        if len(self.actions) == 1:
            return {self.action_keys[0]: instruction}
        return dict(part.split("=", 1) for part in instruction.split("|"))


def _combinations(values: dict[str, list[str]]) -> list[list[tuple[str, str]]]:
    combos: list[list[tuple[str, str]]] = [[]]
    for key, options in values.items():
        combos = [c + [(key, v)] for c in combos for v in options]
    return combos


def check_reward_fields(template: str) -> str:
    """A domain's extra reward prompt uses only the reward prompt's placeholders."""
    return _check_fields(template, REWARD_FIELDS)


def _check_fields(template: str, allowed: frozenset[str]) -> str:
    unknown = sorted(placeholders(template) - allowed)
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) {['{' + u + '}' for u in unknown]}; allowed: {sorted(allowed)}"
        )
    return template


def _describe(error: ErrorDetails, prefix: tuple[str, ...] = ()) -> str:
    loc = ".".join(str(p) for p in (*prefix, *error["loc"])) or "(top level)"
    if error["type"] == "extra_forbidden":
        return f"field `{loc}`: unknown field (mistyped?)"
    if error["type"] == "missing":
        return f"field `{loc}`: missing required field"
    return f"field `{loc}`: {error['msg']}"


def validation_summary(exc: ValidationError, prefix: tuple[str, ...] = ()) -> str:
    """A pydantic error as one line naming each field (no URLs, no input dump); `prefix`
    is where the validated object sits in the config (`params`)."""
    return "; ".join(_describe(e, prefix) for e in exc.errors())


def parse_spec(data: Any, source: str = "<config>") -> DomainSpec:
    """A validated spec from a mapping, its domain not yet bound (`with_domain`)."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a mapping at the top level, got {type(data).__name__}"
        )
    payoff = data.get("payoff")
    for field, old_name in (("private_info_generator", data.get("private_info_generator")),
                            ("payoff.utility", isinstance(payoff, dict) and payoff.get("utility"))):
        if old_name:  # the two keys that both named a domain's code before `domain:`
            raise ConfigError(f"{source}: field `{field}`: a config names its code once now, "
                              f"as `domain: {old_name}`")
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {validation_summary(exc)}") from None
    return spec


class _ConfigLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader names it below
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first given on line {first})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """`line L, column C: problem (context)` in one line, without YAML's quoted source."""
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = f" ({exc.context})" if exc.context else ""
    return f"{where}{exc.problem or exc}{context}"


def _expanded_size(data: Any, limit: int) -> int:
    """How many values `data` holds with every YAML alias expanded (shared lists and dicts
    counted each time they are used), stopping at `limit`; a self-containing value raises."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(x: Any) -> int:
        if not isinstance(x, (list, dict)):
            return 1
        if id(x) in sizes:
            return sizes[id(x)]
        if id(x) in active:
            raise ConfigError("a YAML alias refers to a value that contains it")
        active.add(id(x))
        items = list(x.keys()) + list(x.values()) if isinstance(x, dict) else x
        total = 1
        for item in items:
            total = min(total + size(item), limit)
        active.discard(id(x))
        sizes[id(x)] = total
        return total

    return size(data)


def _read_capped(path: Path) -> bytes:
    """`path`'s bytes, refused past `MAX_CONFIG_BYTES` whatever it is: a regular file (by its
    size, before reading), or what has no size to check (a pipe such as /dev/stdin or
    `<(...)`, a device such as /dev/zero), read only up to one byte past the cap.

    Opened non-blocking: opening a named pipe (FIFO) otherwise waits for a writer for ever.
    A FIFO with no writer then reads as empty at once and is refused; one whose writer is
    waiting, and any pipe, is read with blocking reads to its end, as a shell reads stdin."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb", buffering=0) as source:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: {info.st_size} bytes, over the {MAX_CONFIG_BYTES} a"
                              " config may have (the shipped configs are a few KB); is it the"
                              " right file?")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_CONFIG_BYTES and (chunk := source.read(MAX_CONFIG_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: more than {MAX_CONFIG_BYTES} bytes, over the"
                          f" {MAX_CONFIG_BYTES} a config may have (the shipped configs are a few"
                          " KB); is it the right file?")
    if not size and stat.S_ISFIFO(path.lstat().st_mode):  # named, not /dev/stdin's link
        raise ConfigError(f"{path}: a named pipe with nothing to read (no program is writing"
                          " to it); give the config file itself")
    return b"".join(chunks)


def read_spec(path: str | Path) -> DomainSpec:
    """Read and validate a domain YAML, its domain not yet bound (`gtsteer.domains.load_spec`
    binds it); raises `ConfigError` naming file and field.

    Beyond YAML itself: a key given twice is an error, and so is a file whose aliases expand
    to more than `MAX_CONFIG_VALUES` values (an alias bomb would hang validation). `path` may
    also name a shipped config (`schedule_meeting_dow`; `gtsteer.binding.shipped`)."""
    return parse_spec(read_config_data(path), str(resolve_config(path)))


def read_config_data(path: str | Path) -> Any:
    """A config file's YAML as data, read as `read_spec` reads it, not yet validated."""
    path = resolve_config(path)
    if not path.exists():
        raise ConfigError(missing_config_message(path))
    try:
        # Universal newlines, as `read_text` gives them.
        text = _read_capped(path).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                          f"position {exc.start}); save the config as UTF-8") from None
    try:
        data = yaml.load(text, Loader=_ConfigLoader)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_yaml_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    try:
        too_big = _expanded_size(data, MAX_CONFIG_VALUES + 1) > MAX_CONFIG_VALUES
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if too_big:
        raise ConfigError(f"{path}: expands to more than {MAX_CONFIG_VALUES} values once its "
                          "YAML aliases are resolved (an alias bomb?); write the values out")
    return data

