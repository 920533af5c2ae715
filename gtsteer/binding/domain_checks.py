"""Checks that only a domain's code can make, with the offending field named.

Spec checks (a debate with one side, a verdict table that disagrees with the judge) are
registered with `register_utility(name, validate=...)` and run by `check_domain` when a spec is
loaded; they raise `DomainCheckError`. Instance checks (`register_instance_check`) guard
instances written by something other than the domain's own generator (an LLM).
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
        self.field, self.message = field, message


InstanceCheck = Callable[[DomainSpec, "Instance"], None]
_INSTANCE_CHECKS: dict[str, InstanceCheck] = {}


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
