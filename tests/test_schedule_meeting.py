"""Meeting scheduling: exact utility from the extracted day, private info, config errors."""

from __future__ import annotations

import random

import pytest
from binding_support import ScriptedBackend
from domain_support import config_dict, context, spec_of

from gtsteer.binding import ConfigError, compute_reward, spec_from_dict
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import (
    DAYS,
    agreement_model,
    meeting_private_info,
    meeting_values,
    parse_days,
    render_days,
)
from gtsteer.llm import LLM, StructuredOutputError, run_sync

PREFS = [{"Monday": 3, "Tuesday": 7, "Friday": 6}, {"Monday": 9, "Tuesday": 2, "Friday": 4}]
AWAY = [["Saturday", "Sunday"], ["Friday"]]
INFO = [
    {"out_of_office": render_days(AWAY[p]),
     "day_preferences": ", ".join(f"{d}: {v}" for d, v in PREFS[p].items())}
    for p in range(2)
]


def test_agreed_day_pays_each_player_its_preference() -> None:
    assert meeting_values("Monday", AWAY, PREFS) == [3.0, 9.0]
    assert meeting_values("Tuesday", AWAY, PREFS) == [7.0, 2.0]


def test_out_of_office_day_pays_that_player_zero() -> None:
    assert meeting_values("Friday", AWAY, PREFS) == [6.0, 0.0]


def test_no_agreement_pays_zero() -> None:
    assert meeting_values(None, AWAY, PREFS) == [0.0, 0.0]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"agreed": True, "day": "Tuesday"}, [7.0, 2.0]),
        ({"agreed": True, "day": "Friday"}, [6.0, 0.0]),
        ({"agreed": False, "day": "Tuesday"}, [0.0, 0.0]),  # a day named but not agreed
        ({"agreed": True, "day": "none"}, [0.0, 0.0]),
    ],
)
def test_utility_from_extracted_day(answer: dict, expected: list[float]) -> None:
    spec = spec_of("schedule_meeting_dow")
    llm = LLM("scripted", backend=ScriptedBackend(answer), structured_attempts=1)
    reward = run_sync(compute_reward(context(spec, INFO, llm)))
    assert reward.returns == expected and not reward.clipped


def test_extraction_rejects_a_day_that_is_not_a_day() -> None:
    spec = spec_of("schedule_meeting_dow")
    llm = LLM("scripted", backend=ScriptedBackend({"agreed": True, "day": "Someday"}),
              structured_attempts=1)
    with pytest.raises(StructuredOutputError):
        run_sync(compute_reward(context(spec, INFO, llm)))


def test_extraction_schema_lists_days_and_none() -> None:
    schema = agreement_model(tuple(DAYS)).model_json_schema()
    assert list(schema["properties"]) == ["agreed", "day"]
    assert schema["properties"]["day"]["enum"] == [*DAYS, "none"]


def test_private_info_is_seeded_and_in_range() -> None:
    spec = spec_of("schedule_meeting_dow")
    a = meeting_private_info(spec, random.Random(3), 0, ["A", "B"])
    assert a == meeting_private_info(spec, random.Random(3), 0, ["A", "B"])
    for seed in range(30):
        info = meeting_private_info(spec, random.Random(seed), 0, ["A", "B"])
        away = parse_days(info["out_of_office"])
        prefs = parse_counts(info["day_preferences"])
        assert 1 <= len(away) <= 2 and set(away) <= set(DAYS)
        assert list(prefs) == DAYS and all(1 <= v <= 10 for v in prefs.values())


def test_tone_and_day_configs_share_the_scenario() -> None:
    dow, tone = config_dict("schedule_meeting_dow"), config_dict("schedule_meeting_tone")
    assert dow["actions"] == {"day": [*DAYS, "any"]}
    assert tone["actions"] == {"tone": ["calm", "assertive", "submissive", "any"]}
    for key in ("scenario", "params", "payoff", "private_info_generator", "message_prompt"):
        assert dow[key] == tone[key], key


def _error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        spec_from_dict(data, "meeting.yaml")
    return str(info.value)


def test_day_list_without_any_fails_at_load() -> None:
    data = config_dict("schedule_meeting_dow")
    data["actions"]["day"] = DAYS
    message = _error(data)
    assert "meeting.yaml" in message and "field `actions`" in message and '"any"' in message


def test_unknown_day_in_actions_fails_at_load() -> None:
    data = config_dict("schedule_meeting_dow")
    data["actions"]["day"] = ["Monday", "Funday", "any"]
    data["instruction_definitions"] = {}  # this test is about the domain's own day check
    assert "field `actions.day`: ['Funday']" in _error(data)


def test_payoff_bounds_must_cover_the_preferences() -> None:
    data = config_dict("schedule_meeting_dow")
    data["payoff"]["max"] = 5
    assert "field `payoff`" in _error(data)


def test_out_of_office_range_is_checked() -> None:
    data = config_dict("schedule_meeting_dow")
    data["params"]["out_of_office"] = [2, 7]
    assert "field `params.out_of_office`" in _error(data)


def test_private_features_encode_absence_and_preferences() -> None:
    from gtsteer.binding.features import private_features

    spec = spec_of("schedule_meeting_dow")
    info = {"out_of_office": "Sunday", "day_preferences": ", ".join(f"{d}: 5" for d in DAYS)}
    assert private_features(spec, info) == [0.0] * 6 + [1.0] + [0.5] * 7


def test_psro_may_grow_the_day_set_with_free_instructions() -> None:
    spec = spec_of("schedule_meeting_dow").with_added_instruction("day", "the earliest free day")
    assert "the earliest free day" in spec.actions["day"]
