"""Loading a config with its domain bound: the entry points every driver and test uses.

It sits here, not in gtsteer.binding, because only this package knows the domains
(DESIGN.md: domains may import binding, never the reverse). The binding reads a config as
data (`read_spec`) and plays whatever `Domain` the spec was bound to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gtsteer.binding import DialogueGame, Domain, DomainSpec, make_game, make_instance
from gtsteer.binding.spec import parse_spec, read_spec
from gtsteer.domains.registry import get_domain
from gtsteer.llm import LLM


def bind(spec: DomainSpec, source: str = "<config>", domain: Domain | None = None) -> DomainSpec:
    """`spec` bound to `domain`, or to the domain its `domain:` key names (none: unchanged).
    The domain's checks run here (`DomainSpec.with_domain`), before any LLM call."""
    if domain is None:
        if spec.domain is None:
            return spec
        domain = get_domain(spec.domain, source)
    return spec.with_domain(domain, source)


def spec_from_dict(
    data: Any, source: str = "<config>", domain: Domain | None = None
) -> DomainSpec:
    """A spec from a mapping, validated and bound (`ConfigError` names source and field)."""
    return bind(parse_spec(data, source), source, domain)


def load_spec(path: str | Path, domain: Domain | None = None) -> DomainSpec:
    """Read a domain YAML, validate it and bind its domain; `ConfigError` names file and field."""
    return bind(read_spec(path), str(path), domain)


def load_game(
    config_path: str | Path,
    llm: str | LLM = "fake",
    instance: int = 0,
    *,
    num_games: int | None = None,
    seed: int = 0,
    num_deals: int | None = None,
    sample_offset: int = 0,
    domain: Domain | None = None,
) -> DialogueGame:
    """Instance `instance` of the domain in `config_path` as a pyspiel game.

    The config is validated before anything else (`ConfigError` names the field); no LLM is
    called until a chance node or terminal is reached (or `expand` runs). `num_deals`
    overrides the config's (`--deals` on the command line).
    """
    spec = load_spec(config_path, domain)
    if num_deals is not None:
        spec = spec.with_deals(num_deals)
    if instance < 0 or (num_games is not None and instance >= num_games):
        raise ValueError(f"instance {instance} is outside 0..{(num_games or 1) - 1}")
    inst = make_instance(spec, instance, seed)
    return make_game(spec, inst, llm, config=str(config_path), seed=seed,
                     sample_offset=sample_offset)


def game_from_params(params: dict[str, Any]) -> DialogueGame:
    """Rebuild a game from its pyspiel parameters (another process's serialized game)."""
    return load_game(
        params["config"], llm=params.get("llm", "fake"), instance=int(params.get("instance", 0)),
        seed=int(params.get("seed", 0)), num_deals=int(params.get("deals", 0)) or None,
        sample_offset=int(params.get("sample_offset", 0)),
    )
