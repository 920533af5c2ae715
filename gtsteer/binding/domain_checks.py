"""Load-time checks that only a domain's code can make (its `params`, its verdict table).

`DomainSpec` validates what every domain shares; a domain registers a check under the name of
its utility or private-information generator, and `load_spec` runs it, so a debate with one
side or a verdict table that disagrees with the judge fails at load with the field named,
not hours into a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gtsteer.binding.spec import DomainSpec

if TYPE_CHECKING:
    from gtsteer.binding.instances import Instance


class DomainCheckError(ValueError):
    """A domain-specific problem in a config; `field` is the dotted path of the culprit."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field `{field}`: {message}")
        self.field = field


DomainCheck = Callable[[DomainSpec], None]
InstanceCheck = Callable[[DomainSpec, "Instance"], None]
_CHECKS: dict[str, DomainCheck] = {}
_INSTANCE_CHECKS: dict[str, InstanceCheck] = {}


def register_domain_check(name: str) -> Callable[[DomainCheck], DomainCheck]:
    """Register `check(spec)` (raising `DomainCheckError`) for configs that use `name` as their
    `payoff.utility` or `private_info_generator`."""

    def deco(fn: DomainCheck) -> DomainCheck:
        _CHECKS[name] = fn
        return fn

    return deco


def check_domain(spec: DomainSpec) -> None:
    """Run the checks of every domain code name the spec refers to (each at most once)."""
    from gtsteer.binding.instances import lookup  # instances imports spec: import late

    names = [n for n in (spec.payoff.utility, spec.private_info_generator) if n is not None]
    for name in dict.fromkeys(names):
        try:  # importing the domain module registers its checks alongside its utility
            lookup(_CHECKS, name, "domain check")
        except KeyError:
            continue  # a domain without extra checks
        _CHECKS[name](spec)


def register_instance_check(name: str) -> Callable[[InstanceCheck], InstanceCheck]:
    """Register `check(spec, instance)` (raising `DomainCheckError`) that an instance written by
    someone other than the domain's own generator (an LLM) must pass: private information that
    the utility can parse, a type the verdict table knows."""

    def deco(fn: InstanceCheck) -> InstanceCheck:
        _INSTANCE_CHECKS[name] = fn
        return fn

    return deco


def check_instance(spec: DomainSpec, instance: Instance) -> None:
    from gtsteer.binding.instances import lookup

    names = [n for n in (spec.payoff.utility, spec.private_info_generator) if n is not None]
    for name in dict.fromkeys(names):
        try:
            check = lookup(_INSTANCE_CHECKS, name, "instance check")
        except KeyError:
            continue
        check(spec, instance)
