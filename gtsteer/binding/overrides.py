"""`key=value` overrides of a config's fields, as Hydra's command line gives them.

`num_max_replies=2`, `generation.temperature=0.5`, `actions.day=[Monday,any]`: the key is a
dotted path into the config's YAML mapping, the value is read as YAML (a number, a list, a
mapping, a string), and the changed mapping is validated by the same model as the file
(`parse_spec`), so a bad value or an unknown key fails with the field's name.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import yaml

from gtsteer.binding.spec import ConfigError


def parse_override(text: str) -> tuple[list[str], Any]:
    """`a.b=value` as (["a", "b"], the value read as YAML)."""
    key, sep, raw = text.partition("=")
    path = key.strip().split(".")
    if not sep or not all(part.strip() for part in path):
        raise ConfigError(f"override {text!r}: write it as FIELD=VALUE (a dotted field such as"
                          " generation.temperature=0.5)")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: its value is not YAML"
                          f" ({' '.join(str(exc).split())})") from None
    return [part.strip() for part in path], value


def apply_overrides(data: Any, overrides: Sequence[str]) -> Any:
    """A copy of the config mapping `data` with each override applied, in order. A key that
    is not there yet is added (the validation then says whether the field exists)."""
    if not overrides:
        return data
    if not isinstance(data, dict):
        raise ConfigError("overrides need a config whose top level is a mapping")
    out = copy.deepcopy(data)
    for text in overrides:
        path, value = parse_override(text)
        node = out
        for depth, part in enumerate(path[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(path[: depth + 1])
                raise ConfigError(f"override {text!r}: {where} is a {type(child).__name__},"
                                  " not a mapping with fields")
            node = child
        node[path[-1]] = value
    return out
