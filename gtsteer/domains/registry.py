"""The one registry of domains: name -> `Domain` record.

`gtsteer.domains` registers the built-in records when it is imported; code outside the package
(a test, a project of one's own) registers its own with `register_domain`. A config's `domain:`
key is looked up here once, when the config is loaded (`gtsteer.domains.load_spec`), and may
also name a record in any importable module, `domain: my_pkg.bikes:BIKE_HAGGLE` (imported then,
so also in every Ray worker that loads the config), or the name an installed package registers
through the entry-point group `gtsteer.domains` (docs/DOMAINS.md).
"""

from __future__ import annotations

from importlib.metadata import entry_points

from gtsteer.binding import ConfigError, Domain
from gtsteer.binding.domain import is_domain_reference
from gtsteer.llm.references import ReferenceProblem, kind_of_value, one_line, resolve

#: The entry-point group through which installed packages add domains: `name = "module:ATTR"`,
#: where `name` is the record's name (what a config's `domain:` says).
ENTRY_POINT_GROUP = "gtsteer.domains"

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
    """The record called `name` (registered, or from an installed package's entry point), or
    the one a `module:ATTRIBUTE` reference names; a `ConfigError` naming the field and the
    known names."""
    if is_domain_reference(name):
        return _imported(name, source)
    if name not in DOMAINS:
        _load_entry_point(name, source)
    try:
        return DOMAINS[name]
    except KeyError:
        raise ConfigError(f"{source}: field `domain`: no domain named {name!r} is registered; "
                          f"known: {sorted(DOMAINS)}; a domain of your own can be named as "
                          "`module:ATTRIBUTE` (docs/DOMAINS.md)") from None


def _imported(reference: str, source: str) -> Domain:
    """The `Domain` at `module:ATTRIBUTE`, imported and registered under its own name. Whatever
    goes wrong (the import raises, even `SystemExit`; the attribute is missing or no `Domain`;
    its name is taken) is a `ConfigError` naming the config and the reference."""
    where = f"{source}: field `domain`: {reference!r}"
    try:
        record = resolve(reference, "domain")
    except ReferenceProblem as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not isinstance(record, Domain):
        attribute = reference.partition(":")[2]
        raise ConfigError(f"{where}: {attribute!r} is {kind_of_value(record)}, not a gtsteer"
                          " Domain")
    return _register(record, where)


def _register(record: Domain, where: str) -> Domain:
    try:
        return register_domain(record)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}; give the record a name of its own (its `name` is"
                          " what configs call it)") from None


def _load_entry_point(name: str, source: str) -> None:
    """Register the domain an installed package declares as `name` in `ENTRY_POINT_GROUP`."""
    for point in entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:
            record = point.load()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - named, not a traceback
            raise ConfigError(f"{source}: field `domain`: the entry point {name!r} ="
                              f" {point.value!r} failed to load: {one_line(exc)}") from None
        if not isinstance(record, Domain) or record.name != name:
            raise ConfigError(f"{source}: field `domain`: the entry point {name!r} ="
                              f" {point.value!r} is not a Domain named {name!r}")
        _register(record, f"{source}: field `domain`: the entry point {name!r}")
