"""The one registry of domains: name -> `Domain` record.

`gtsteer.domains` registers the built-in records when it is imported; code outside the package
(a test, a project of one's own) registers its own with `register_domain`. A config's `domain:`
key is looked up here once, when the config is loaded (`gtsteer.domains.load_spec`), and may
also name a record in any importable module, `domain: my_pkg.bikes:BIKE_HAGGLE` (imported then,
so also in every Ray worker that loads the config), or the name an installed package registers
through the entry-point group `gtsteer.domains` (docs/DOMAINS.md).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from gtsteer.binding import ConfigError, Domain
from gtsteer.binding.domain import is_domain_reference

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
    module_name, _, attribute = reference.partition(":")
    where = f"{source}: field `domain`: {reference!r}"
    if not module_name or not attribute:
        raise ConfigError(f"{where}: expected `module:ATTRIBUTE`")
    if module_name.startswith("."):
        raise ConfigError(f"{where}: a relative module cannot be imported from a config; give"
                          " the module's full name (`package.module:ATTRIBUTE`)")
    module = _import(module_name, where)
    record: Any = module
    for part in attribute.split("."):
        record = getattr(record, part, _MISSING)
        if record is _MISSING:
            raise ConfigError(f"{where}: module {module_name!r} has no {attribute!r}")
    if not isinstance(record, Domain):
        raise ConfigError(f"{where}: {attribute!r} is {_kind(record)}, not a gtsteer Domain")
    return _register(record, where)


#: `getattr`'s default: an attribute that exists but is None is not a missing one.
_MISSING = object()


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _import(module_name: str, where: str) -> Any:
    """`importlib.import_module`, every failure of the module's own code a `ConfigError`: a
    config names trusted code, but its bug must not end the run with a traceback, nor its
    `sys.exit(0)` with success and no output."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and f"{module_name}.".startswith(f"{exc.name}."):
            raise ConfigError(f"{where}: cannot import {module_name!r} ({exc}); install it or"
                              " put its folder on PYTHONPATH") from None
        raise ConfigError(f"{where}: importing {module_name!r} failed: {_failure(exc)}") from None
    except SystemExit as exc:
        raise ConfigError(f"{where}: importing {module_name!r} called sys.exit({exc.code!r});"
                          " a domain module must not exit when imported") from None
    except Exception as exc:  # noqa: BLE001 - the module's own error, named in one line
        raise ConfigError(f"{where}: importing {module_name!r} failed: {_failure(exc)}") from None


def _failure(exc: BaseException) -> str:
    """`exc` in one line, with where a `SyntaxError` is (its message alone says neither)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}"


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
                              f" {point.value!r} failed to load: {_failure(exc)}") from None
        if not isinstance(record, Domain) or record.name != name:
            raise ConfigError(f"{source}: field `domain`: the entry point {name!r} ="
                              f" {point.value!r} is not a Domain named {name!r}")
        _register(record, f"{source}: field `domain`: the entry point {name!r}")
