"""Checks that only a domain's code can make, with the offending field named.

Spec checks (a debate with one side, a verdict table that disagrees with the judge) are a
domain's `validate` hook, run once when the spec is bound (`DomainSpec.with_domain`); they
raise `DomainCheckError`. Instance checks (`Domain.instance_check`) guard instances written by
something other than the domain's own generator (an LLM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gtsteer.binding.spec import DomainSpec

if TYPE_CHECKING:
    from gtsteer.binding.instances import Instance


class DomainCheckError(ValueError):
    """A domain-specific problem in a config; `field` is the dotted path of the culprit."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field `{field}`: {message}")
        self.field, self.message = field, message


def check_instance(spec: DomainSpec, instance: Instance) -> None:
    """The domain's instance check, if it has one (raises `DomainCheckError`)."""
    check = spec.hooks.instance_check
    if check is not None:
        check(spec, instance)
