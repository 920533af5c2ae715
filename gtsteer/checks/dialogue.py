"""Every check on a dialogue game or config: what `tests/project/test_conformance.py` runs over
`gtsteer/configs/*.yaml`, so a new domain is checked the moment its YAML lands.

A config is checked with the offline `fake` model (or a test model) on instance 0, or on a
smaller variant when its tree is too big to walk (`reduced_spec`), and once more dealt.
"""

from __future__ import annotations

import math
from typing import Any

import pyspiel
from pydantic import BaseModel, Field

from gtsteer.binding.expand import expand_sync
from gtsteer.binding.game import DialogueGame
from gtsteer.binding.instances import make_instance
from gtsteer.binding.loader import make_game
from gtsteer.binding.spec import ANY, DomainSpec, parse_spec
from gtsteer.checks.errors import fail
from gtsteer.checks.isolation import isolation_check
from gtsteer.checks.pyspiel_api import pyspiel_api_check
from gtsteer.checks.soft import echo_rate_warnings, instruction_warnings

#: Leaves above which the check solves a smaller variant of the config (same prompts/payoffs).
MAX_LEAVES = 4096


class ConformanceReport(BaseModel):
    config: str
    #: How the checked variant differs from the config ([] when the config itself was checked).
    reduced: list[str]
    histories: int
    info_states: int
    messages: int
    echoed_messages: int
    nash_conv: float
    cfr_backend: str
    #: The warning tier's findings (also issued as `CheckWarning`s).
    warnings: list[str] = Field(default_factory=list)


def leaves_bound(spec: DomainSpec) -> int:
    """Leaves of the full tree when no dialogue ends early (an upper bound)."""
    actions = math.prod(len(v) for v in spec.actions.values())
    depths = range(spec.num_players * spec.num_max_replies)
    return math.prod(actions * spec.samples_at(d) for d in depths) * spec.num_deals


def reduced_spec(spec: DomainSpec, max_leaves: int = MAX_LEAVES) -> tuple[DomainSpec, list[str]]:
    """The spec, or a smaller variant when its tree exceeds `max_leaves`: one LLM sample, then
    one instruction value (and `any`) per key, then one reply each; never dealt. The variant
    keeps the spec's domain (and passes its checks again)."""
    data = spec.model_dump()
    notes: list[str] = []

    def reduce(field: str, value: Any, note: str) -> None:
        data[field] = value
        notes.append(note)

    def too_big() -> bool:
        return leaves_bound(parse_spec(data)) > max_leaves

    if data["num_deals"] > 1:
        reduce("num_deals", 1, "num_deals -> 1 (the dealt mode gets random_sim_test only)")
    if too_big() and parse_spec(data).max_llm_seeds > 1:
        reduce("num_llm_seeds", 1, "num_llm_seeds -> 1")
    if too_big():
        fewer = {k: [*[v for v in vs if v != ANY][:1], ANY] for k, vs in data["actions"].items()}
        reduce("actions", fewer, "actions -> one value and any per key")
        # The trimmed values' definitions go too (a definition must name a value of its key).
        data["instruction_definitions"] = {
            k: {v: text for v, text in defs.items() if v in fewer[k]}
            for k, defs in data["instruction_definitions"].items()
        }
    if too_big() and data["num_max_replies"] > 1:
        reduce("num_max_replies", 1, "num_max_replies -> 1")
    variant = parse_spec(data, "conformance variant")
    if spec.domain is not None:
        variant = variant.with_domain(spec.hooks, "conformance variant")
    return variant, notes


def check_game(game: DialogueGame, config: str = "<game>") -> ConformanceReport:
    """Every check on one built game (expands it with its own LLM)."""
    try:
        pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)
    except Exception as exc:
        raise fail(config, "random_sim_test", f"{type(exc).__name__}: {exc}") from exc
    report = expand_sync(game, progress=False)
    if report.failed:
        raise fail(config, "expand", str(report.reason))
    info_states = isolation_check(game, config)
    api = pyspiel_api_check(game, config, random_sim=False)
    return ConformanceReport(
        config=config, reduced=[], histories=api.histories, info_states=info_states,
        messages=len(game.messages), echoed_messages=len(game.echoes), nash_conv=api.nash_conv,
        cfr_backend=api.cfr_backend,
        warnings=instruction_warnings(game.spec, config) + echo_rate_warnings(game, config),
    )  # fmt: skip


def check_spec(
    spec: DomainSpec, config: str = "<config>", llm: Any = "fake", *,
    max_leaves: int = MAX_LEAVES,
) -> ConformanceReport:
    """Check a loaded config (or its smaller variant, see `reduced_spec`); raises
    `ConformanceError`. Load it with `gtsteer.domains.load_spec`, which binds its domain.

    `llm` is a model string or a `gtsteer.llm.LLM` (checks import binding and solvers only,
    DESIGN.md, so the type is not spelled here). Pass an echoing test model as `llm` to
    exercise the echo stripping on the config's own instruction templates. The dealt mode (two
    deals) is checked with `random_sim_test` too.
    """
    spec, notes = reduced_spec(spec, max_leaves)
    game = make_game(spec, make_instance(spec, 0), llm)
    report = check_game(game, config)
    dealt = make_game(spec.with_deals(2), make_instance(spec, 0), game.llm)  # one client
    try:
        pyspiel.random_sim_test(dealt, num_sims=3, serialize=True, verbose=False)
    except Exception as exc:
        raise fail(config, "random_sim_test (dealt)", f"{type(exc).__name__}: {exc}") from exc
    return report.model_copy(update={"reduced": notes})
