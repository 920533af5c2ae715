"""The one registry of domains: name -> `Domain` record.

`gtsteer.domains` registers the built-in records when it is imported; code outside the package
(a test, a project of one's own) registers its own with `register_domain`. A config's `domain:`
key is looked up here once, when the config is loaded (`gtsteer.domains.load_spec`).
"""

from __future__ import annotations

from gtsteer.binding import ConfigError, Domain

DOMAINS: dict[str, Domain] = {}


def register_domain(domain: Domain) -> Domain:
    """Make `domain` loadable by name; a second, different record under one name is refused
    (two modules claiming one name would otherwise depend on import order)."""
    if not domain.name:
        raise ValueError("a domain needs a name (the config's `domain:` key)")
    known = DOMAINS.get(domain.name)
    if known is not None and known != domain:
        raise ValueError(f"domain {domain.name!r} is already registered with other hooks")
    DOMAINS[domain.name] = domain
    return domain


def get_domain(name: str, source: str = "<config>") -> Domain:
    """The record called `name`; a `ConfigError` naming the field and the known names."""
    try:
        return DOMAINS[name]
    except KeyError:
        raise ConfigError(f"{source}: field `domain`: no domain named {name!r} is registered; "
                          f"known: {sorted(DOMAINS)}") from None
