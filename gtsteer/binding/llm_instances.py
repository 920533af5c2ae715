"""Instances written by an LLM from the config's examples (optional, next to the seeded ones).

The paper lets the model write new private information (baskets, availabilities, topics) from
a few examples. Here the model answers one validated JSON object per instance: player names
and every private-information field the domain's own generator would produce. The object is
then checked against the spec (distinct names usable as speaker tags, the same fields, and the
domain's `instance_check`, e.g. days the meeting utility can parse); an invalid answer
is asked again with the next seed, up to `attempts` times. Every call goes through the LLM
cache with a seed fixed by (domain, seed, index, attempt), so a model and a seed always give the
same instances, and a rerun makes no call.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model

from gtsteer.binding.domain_checks import DomainCheckError, check_instance
from gtsteer.binding.instances import Instance, make_instance, name_fields, stable_int
from gtsteer.binding.prompts import fill_template
from gtsteer.binding.spec import DomainSpec, validation_summary
from gtsteer.llm import LLM


class InstanceGenerationError(ValueError):
    """The model did not write a valid instance within the allowed attempts."""


def _keys(spec: DomainSpec) -> list[list[str]]:
    """The private-information fields of each player, as the seeded generator makes them."""
    return [list(info) for info in make_instance(spec, 0).private_info]


def _field(player: int, key: str) -> str:
    return f"player{player}_{key}"


@lru_cache(maxsize=32)
def _schema(num_players: int, keys: tuple[tuple[str, ...], ...]) -> type[BaseModel]:
    fields: dict = {
        "names": (list[str], Field(min_length=num_players, max_length=num_players)),
    }
    for p, player_keys in enumerate(keys):
        for key in player_keys:
            fields[_field(p, key)] = (str, Field(min_length=1, max_length=300))
    return create_model("GeneratedInstance", **fields)


def instance_prompt(spec: DomainSpec, examples: list[Instance]) -> str:
    """Completion-style request: the domain, a few seeded examples as JSON, then a new one."""
    keys = _keys(spec)
    lines = [
        f"Domain: {spec.name}. {spec.description}".strip(),
        f"Players: {', '.join(spec.players)}. Example names: {', '.join(spec.names[:6])}.",
        (
            "Write a new, different game in the same format. Keep every field's format exactly "
            "(the same kind of values, lists and numbers as in the examples)."
        ),
        "",
    ]
    for ex in examples:
        obj: dict[str, Any] = {"names": ex.names}
        for p, player_keys in enumerate(keys):
            for key in player_keys:
                obj[_field(p, key)] = ex.private_info[p][key]
        lines.append("Example: " + json.dumps(obj, ensure_ascii=False))
    lines.append("New game:")
    return "\n".join(lines)


def validate_generated(spec: DomainSpec, data: BaseModel, index: int, seed: int) -> Instance:
    """An `Instance` from the model's object, or `DomainCheckError` naming what is wrong."""
    values = data.model_dump()
    names = [str(n).strip() for n in values["names"]]
    if len(set(names)) != len(names) or any(
        not n or len(n) > 40 or ":" in n or "\n" in n for n in names
    ):
        raise DomainCheckError("names", f"need distinct short names without ':', got {names}")
    keys = _keys(spec)
    private = [{k: str(values[_field(p, k)]).strip() for k in ks} for p, ks in enumerate(keys)]
    fields = name_fields(names)
    instance = Instance(
        index=index,
        seed=stable_int("gtsteer-llm-instance", spec.name, seed, index),
        names=names,
        private_info=private,
        scenario=fill_template(spec.scenario, fields).strip(),
        opening=None if spec.opening is None else fill_template(spec.opening, fields).strip(),
    )
    check_instance(spec, instance)
    return instance


def generate_llm_instances(
    spec: DomainSpec, llm: LLM, num: int, seed: int = 0, *, examples: int = 3, attempts: int = 3
) -> list[Instance]:
    """`num` LLM-written instances of `spec`, validated; deterministic for a model and seed."""
    if num < 0 or examples < 1 or attempts < 1:
        raise ValueError(
            f"num >= 0, examples >= 1, attempts >= 1; got {num}, {examples}, {attempts}"
        )
    shots = [make_instance(spec, i, seed) for i in range(examples)]
    prompt = instance_prompt(spec, shots)
    schema = _schema(spec.num_players, tuple(tuple(k) for k in _keys(spec)))
    out: list[Instance] = []
    for index in range(num):
        problems: list[str] = []
        for attempt in range(attempts):
            answer = llm.structured_sync(
                prompt, schema, seed=stable_int("gtsteer-llm-instance", spec.name, seed, index,
                                                attempt),
                temperature=max(spec.generation.temperature, 0.7), max_tokens=512,
            )
            try:
                out.append(validate_generated(spec, answer.value, index, seed))
                break
            except DomainCheckError as exc:
                problems.append(str(exc))
        else:
            raise InstanceGenerationError(
                f"{spec.name}: instance {index}: no valid instance in {attempts} attempts: "
                + "; ".join(problems)
            )
    return out


def instances_jsonl(instances: list[Instance]) -> str:
    """The JSONL text `read_instances` reads: one instance per line."""
    return "".join(i.model_dump_json() + "\n" for i in instances)


def read_instances(path: str | Path, spec: DomainSpec | None = None) -> list[Instance]:
    """The instances of a JSONL file (`gtsteer instances` writes one). With `spec`, each must
    fit that domain: same players, same private-information fields, the domain's own checks;
    a `DomainCheckError` names the line and the field otherwise."""
    lines = [(n, line) for n, line in
             enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    if not lines:
        raise ValueError(f"{path}: no instances in the file")
    instances = []
    for n, line in lines:
        try:
            instances.append(Instance.model_validate_json(line))
        except ValidationError as exc:
            raise ValueError(f"{path} line {n}: not an instance: {validation_summary(exc)}") \
                from None
    if spec is not None:
        check_fits(spec, instances, [f"{path} line {n}" for n, _ in lines])
    return instances


def check_fits(spec: DomainSpec, instances: list[Instance], where: list[str]) -> None:
    """Each instance fits `spec` (same players, same private-information fields, the domain's
    own checks); a `DomainCheckError` names `where[i]` and the field otherwise."""
    keys = _keys(spec)
    for place, instance in zip(where, instances, strict=True):
        try:
            _check_fits(spec, keys, instance)
        except DomainCheckError as exc:
            raise DomainCheckError(exc.field, f"{place}: {exc.message}") from None


def _check_fits(spec: DomainSpec, keys: list[list[str]], instance: Instance) -> None:
    if len(instance.names) != len(keys) or len(instance.private_info) != len(keys):
        raise DomainCheckError("names", f"{len(keys)} players in {spec.name}, "
                               f"the instance has {len(instance.names)}")
    for p, (want, got) in enumerate(zip(keys, instance.private_info, strict=True)):
        if sorted(want) != sorted(got):
            raise DomainCheckError(f"private_info.{p}", f"{spec.name} needs fields {want}, "
                                   f"the instance has {sorted(got)}")
    check_instance(spec, instance)
