"""Config validation: every error names the file and the field, before any LLM call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from binding_support import FRUIT, fruit_dict

import gtsteer
from gtsteer.binding import ANY, ConfigError
from gtsteer.domains import load_game, load_spec, spec_from_dict
from gtsteer.llm import LLM


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "domain.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def error_of(tmp_path: Path, data: Any) -> str:
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_spec(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_fruit_config_loads() -> None:
    spec = load_spec(FRUIT)
    assert spec.instructions() == ["calm", "assertive", "submissive", "any"]
    assert (spec.num_llm_seeds, spec.num_max_replies) == (2, 1)
    assert (spec.payoff.min, spec.payoff.max, spec.domain) == (-96, 96, "fruit_trade")
    assert spec.num_deals == 1


def test_missing_field_is_named(tmp_path: Path) -> None:
    data = fruit_dict()
    del data["num_llm_seeds"]
    assert "field `num_llm_seeds`: missing" in error_of(tmp_path, data)


def test_mistyped_field_name_is_named(tmp_path: Path) -> None:
    data = fruit_dict()
    data["num_llm_seed"] = data.pop("num_llm_seeds")
    message = error_of(tmp_path, data)
    assert "field `num_llm_seed`: unknown field" in message
    assert "field `num_llm_seeds`: missing" in message


def test_mistyped_nested_field_is_named(tmp_path: Path) -> None:
    data = fruit_dict()
    data["payoff"]["maximum"] = data["payoff"].pop("max")
    message = error_of(tmp_path, data)
    assert "field `payoff.maximum`: unknown field" in message
    assert "field `payoff.max`: missing" in message


def test_wrong_type_is_named(tmp_path: Path) -> None:
    data = fruit_dict()
    data["num_llm_seeds"] = "two"
    assert "field `num_llm_seeds`: Input should be a valid integer" in error_of(tmp_path, data)


def test_out_of_range_is_named(tmp_path: Path) -> None:
    data = fruit_dict()
    data["num_llm_seeds"] = 0
    assert "field `num_llm_seeds`: Input should be greater than 0" in error_of(tmp_path, data)


def test_instruction_set_without_any(tmp_path: Path) -> None:
    data = fruit_dict()
    data["actions"]["tone"] = ["calm", "assertive"]
    message = error_of(tmp_path, data)
    assert "field `actions`" in message and f'must include "{ANY}"' in message


def test_unknown_placeholder_is_named(tmp_path: Path) -> None:
    data = fruit_dict()
    data["message_prompt"] += "{secret}"
    message = error_of(tmp_path, data)
    assert "field `message_prompt`" in message and "{secret}" in message


def test_bad_payoff_bounds(tmp_path: Path) -> None:
    data = fruit_dict()
    data["payoff"]["min"] = 100
    assert "field `payoff`" in error_of(tmp_path, data)


def test_not_a_mapping_and_bad_yaml(tmp_path: Path) -> None:
    assert "expected a mapping" in error_of(tmp_path, ["a", "b"])
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_spec(path)
    with pytest.raises(ConfigError, match="no such config file"):
        load_spec(tmp_path / "missing.yaml")


def test_config_error_is_a_value_error_raised_before_any_llm_call(tmp_path: Path) -> None:
    data = fruit_dict()
    del data["payoff"]
    llm = LLM("fake")
    with pytest.raises(ValueError, match="field `payoff`"):
        load_game(write(tmp_path, data), llm=llm)
    assert llm.usage.requests == 0


def test_multi_key_instructions() -> None:
    spec = load_spec(FRUIT).model_copy(
        update={"actions": {"tone": ["calm", "any"], "day": ["Monday", "any"]}}
    )
    assert spec.instructions() == [
        "tone=calm|day=Monday", "tone=calm|day=any", "tone=any|day=Monday", "tone=any|day=any",
    ]
    assert spec.parse_instruction("tone=any|day=Monday") == {"tone": "any", "day": "Monday"}


def test_zero_sum_needs_symmetric_bounds(tmp_path: Path) -> None:
    data = fruit_dict()
    data["payoff"].update(zero_sum=True, min=-5, max=20)
    assert "field `payoff`" in error_of(tmp_path, data) and "symmetric" in error_of(tmp_path, data)


def test_json_braces_in_prompts_are_not_placeholders() -> None:
    from gtsteer.binding import Turn, make_instance
    from gtsteer.binding.prompts import reward_prompt

    spec = load_spec(FRUIT)
    inst = make_instance(spec, 0)
    turns = [Turn(speaker=0, instruction="calm", text="Two kiwis for an apple?")]
    rendered = reward_prompt(spec, inst, turns)
    # The placeholders are filled, the JSON examples survive intact.
    assert rendered.startswith(f"{inst.names[0]} and {inst.names[1]} trade fruit.\n")
    assert f"{inst.names[0]}: Two kiwis for an apple?" in rendered
    assert '{"deal": true, "ann_gives": ["banana", "banana"], "ben_gives": ["kiwi"]}' in rendered
    assert '{"deal": false, "ann_gives": [], "ben_gives": []}' in rendered
    assert "{players}" not in rendered and "{transcript}" not in rendered


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"players": ["a", "b", "c"], "names": ["A", "B", "C"]}, "players"),
        ({"params": {"fruits": ["apple"], "max_count": 0}}, "params.max_count"),
        ({"params": {"fruits": ["apple"], "max_count": 10**23}}, "params.max_count"),
        ({"params": {"fruits": ["apple"], "value_range": [5, 2]}}, "params.value_range"),
        ({"domain": "no_such_domain"}, "domain"),
    ],
)
def test_domain_checks_name_the_field_before_any_llm_call(
    tmp_path: Path, change: dict, field: str
) -> None:
    data = {**fruit_dict(), **change}
    llm = LLM("fake")
    with pytest.raises(ConfigError, match=f"field `{field}`"):
        gtsteer.solve(write(tmp_path, data), llm=llm, out=tmp_path / "o", quiet=True)
    with pytest.raises(ConfigError, match=f"field `{field}`"):
        load_game(write(tmp_path, data), llm=llm)
    assert llm.usage.requests == 0


# ---- issue 27: config edge cases -------------------------------------------------------------


@pytest.mark.parametrize("bounds", [(float("-inf"), float("inf")), (0.0, float("inf"))])
def test_infinite_payoff_bounds_are_refused(tmp_path: Path, bounds: tuple[float, float]) -> None:
    data = fruit_dict()
    data["payoff"]["min"], data["payoff"]["max"] = bounds
    message = error_of(tmp_path, data)
    assert "payoff." in message and "finite" in message


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    text = FRUIT.read_text(encoding="utf-8")
    path.write_text(text + "num_llm_seeds: 1\n", encoding="utf-8")
    first = next(n for n, line in enumerate(text.splitlines(), 1)
                 if line.startswith("num_llm_seeds:"))
    with pytest.raises(ConfigError, match="duplicate key 'num_llm_seeds'") as info:
        load_spec(path)
    assert f"first given on line {first}" in str(info.value) and str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_a_yaml_merge_key_may_still_be_overridden(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    body = yaml.safe_dump({k: v for k, v in fruit_dict().items() if k != "generation"})
    path.write_text(body + "generation:\n  <<: {max_tokens: 40, temperature: 0.5}\n"
                    "  temperature: 0.9\n", encoding="utf-8")
    spec = load_spec(path)
    assert (spec.generation.max_tokens, spec.generation.temperature) == (40, 0.9)


def test_an_alias_bomb_in_params_is_refused_at_once(tmp_path: Path) -> None:
    """Nine anchors of ten references each: 10^9 values in a 600-byte file."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    body = yaml.safe_dump({k: v for k, v in fruit_dict().items() if k != "params"})
    path.write_text(body + "params:\n" + "\n".join("  " + line for line in lines) + "\n",
                    encoding="utf-8")
    with pytest.raises(ConfigError, match="more than 100000 values") as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_a_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    body = yaml.safe_dump({k: v for k, v in fruit_dict().items() if k != "params"})
    path.write_text(body + "params: &p {loop: *p}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="contains it"):
        load_spec(path)


def test_a_non_utf8_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfename: x\n")
    with pytest.raises(ConfigError) as info:
        load_spec(path)
    assert str(path) in str(info.value) and "not UTF-8" in str(info.value)
    assert "0xff" in str(info.value)


@pytest.mark.parametrize("old", [{"private_info_generator": "fruit_trade"},
                                 {"payoff": {"min": -1, "max": 1, "prompt": "x",
                                             "utility": "fruit_trade"}}])
def test_the_two_old_domain_keys_say_what_replaced_them(old: dict) -> None:
    data = {**fruit_dict(), **old}
    with pytest.raises(ConfigError, match=r"a config names its code once now, as `domain: "
                                          r"fruit_trade`"):
        spec_from_dict(data, "old.yaml")
