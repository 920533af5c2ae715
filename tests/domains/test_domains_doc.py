"""docs/DOMAINS.md cannot drift from the config model (issue 60 item 6): its field table names
every field of `DomainSpec` and of the models inside it (`payoff.min`, `models.<role>.model`),
says "required" exactly for the required ones, and the reward-case section names every field
of `RewardCase` and `Turn` and its example writes the cases it says."""

from __future__ import annotations

import random
import re
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from test_private_info_roles import BIKES

from gtsteer.binding import make_instance
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward_cases import RewardCase
from gtsteer.binding.run_models import RunModels
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains import spec_from_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "DOMAINS.md"


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in models_in(arg)]
    return []


def config_fields(model: type[BaseModel] = DomainSpec, prefix: str = "") -> dict[str, bool]:
    """Every field a config may hold, dotted, -> whether it is required."""
    out: dict[str, bool] = {}
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        out[path] = field.is_required()
        # each role of `models:` has the same keys: the table writes them once, for <role>
        inner = "models.<role>." if model is RunModels else f"{path}."
        for nested in models_in(field.annotation):
            out.update(config_fields(nested, inner))
    return out


def table_rows() -> dict[str, str]:
    """The field table: each backticked name of a row's first cell -> its second cell."""
    rows: dict[str, str] = {}
    for line in section("Fields").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 3:
            rows.update(dict.fromkeys(re.findall(r"`([^`]+)`", cells[0]), cells[1]))
    return rows


def test_every_config_field_is_in_the_table_with_whether_it_is_required() -> None:
    fields, rows = config_fields(), table_rows()
    assert "instruction_definitions" in fields and "payoff.min" in fields
    assert "models.<role>.api_key_env" in fields
    missing = sorted(set(fields) - set(rows))
    assert missing == [], f"docs/DOMAINS.md's field table lacks {missing}"
    unknown = sorted(set(rows) - set(fields))
    assert unknown == [], f"docs/DOMAINS.md's field table names no field {unknown}"
    wrong = sorted(f for f, required in fields.items() if required != (rows[f] == "required"))
    assert wrong == [], f"required or not, the table says otherwise for {wrong}"


def test_the_reward_case_types_are_documented_field_by_field() -> None:
    text = section("Reward cases: known payoffs to test a reward path")
    for model in (RewardCase, Turn):
        undocumented = [f for f in model.model_fields if f"`{f}`" not in text]
        assert undocumented == [], f"{model.__name__} fields not in DOMAINS.md: {undocumented}"
    assert "CaseWriter" in text and "RewardCases(" in text and "`valid`" in text


def test_the_reward_case_example_writes_cases_with_the_payoffs_it_states() -> None:
    code = section("Reward cases: known payoffs to test a reward path").split("```python\n")[1]
    example: dict = {}
    exec(code.split("```")[0], example)  # the doc's own text, as a reader copies it
    spec = spec_from_dict(BIKES, "bikes.yaml", example["BIKE_HAGGLE"])
    writer = spec.hooks.reward_cases.writer
    instance = make_instance(spec, 0)
    budget = int(instance.private_info[1]["budget"].split("$")[1].rstrip("."))
    for outcome in ("valid", "rejected", "incomplete"):
        case = writer(spec, random.Random(0), instance, outcome)
        assert case.outcome == outcome and case.transcript[0].instruction == "any"
        price = case.facts["price"]
        assert case.truth == ([price - 300, budget - price] if outcome == "valid" else [0, 0])
