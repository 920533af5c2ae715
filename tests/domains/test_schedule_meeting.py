"""Meeting scheduling: exact utility from the extracted day, private info, config errors."""

from __future__ import annotations

import random

import pytest
from domain_support import config_dict, context, spec_of

from gtsteer.binding import ConfigError, compute_reward
from gtsteer.binding.prompts import Turn
from gtsteer.domains import spec_from_dict
from gtsteer.domains.fruit_trade import parse_counts
from gtsteer.domains.schedule_meeting import (
    DAYS,
    meeting_private_info,
    meeting_values,
    named_days,
    parse_days,
    render_days,
)
from gtsteer.llm import LLM, run_sync
from gtsteer.llm.backends.base import Backend
from gtsteer.llm.types import GenerationRequest

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


def test_a_day_either_player_is_away_pays_both_zero() -> None:
    # Bob is away on Friday: no meeting happens, so Ann's 6 for Friday is not paid either.
    assert meeting_values("Friday", AWAY, PREFS) == [0.0, 0.0]
    assert meeting_values("Sunday", AWAY, [{"Sunday": 5}, {"Sunday": 8}]) == [0.0, 0.0]


def test_no_agreement_pays_zero() -> None:
    assert meeting_values(None, AWAY, PREFS) == [0.0, 0.0]


class MeetingReader(Backend):
    """Log-likelihoods that like `favourite` day and "yes" whatever the transcript (a small model's
    prior), plus a bonus for what the transcript says: "yes" when it holds "Agreed", and the day
    it names. Calibration must see through the prior."""

    kind = "meeting-reader"

    def __init__(self, favourite: str = "Friday"):
        super().__init__("meeting-reader")
        self.favourite = favourite
        self.prompts: list[str] = []

    async def complete(self, request: GenerationRequest, json_schema: dict | None = None):
        raise AssertionError("the meeting utility asks choices only")

    async def score_options(self, request: GenerationRequest, options: list[str]):
        text = request.as_text()
        self.prompts.append(text)
        said = text.split("\n\n")[0] if "Ann:" in text else ""
        scores = {}
        for option in options:
            prior = 3.0 if option in (self.favourite, "yes") else 0.0
            cue = {"yes": "Agreed", "no": "No."}.get(option, option)
            bonus = 2.0 * said.count(cue)
            scores[option] = prior + bonus
        return scores


def _read(proposal: str, reply: str) -> tuple[list[float], MeetingReader]:
    spec = spec_of("schedule_meeting_dow")
    backend = MeetingReader("Friday")
    ctx = context(spec, INFO, LLM("reader", backend=backend, use_cache=False))
    ctx = ctx.model_copy(update={"transcript": [
        Turn(speaker=0, instruction=None, text=proposal),
        Turn(speaker=1, instruction=None, text=reply),
    ]})
    return run_sync(compute_reward(ctx)).returns, backend


def test_agreed_day_is_read_past_the_models_favourite_day() -> None:
    # Raw scores pick Friday (3 + 2 > 2 + 2) and "yes"; calibrated, Tuesday (named twice) wins.
    returns, backend = _read("Tuesday or Friday?", "Agreed, Tuesday it is.")
    assert returns == [7.0, 2.0]
    assert len(backend.prompts) == 4  # yes/no and day, each with its content-free twin
    assert sum("N/A" in p for p in backend.prompts) == 2
    day_question = next(p for p in backend.prompts if "Which day" in p)
    assert "Ann: Tuesday or Friday?" in day_question


def test_one_named_day_needs_no_day_question() -> None:
    returns, backend = _read("Let's meet on tuesday.", "Agreed.")
    assert returns == [7.0, 2.0]
    assert not any("Which day" in p for p in backend.prompts)


def test_no_agreement_pays_zero_without_asking_the_day() -> None:
    # Raw "yes" (3) beats "no" (2); calibrated, "no" wins (0 vs +2) and no day is asked.
    returns, backend = _read("Tuesday or Friday?", "No. Let's not meet.")
    assert returns == [0.0, 0.0]
    assert not any("Which day" in p for p in backend.prompts)


def test_a_dialogue_that_names_no_day_pays_zero_without_asking() -> None:
    # The favourite "yes" and "Friday" would win any question; none is asked.
    returns, backend = _read("Here is a possible conversation:", "Agreed, that day it is.")
    assert returns == [0.0, 0.0] and backend.prompts == []


def test_named_days_match_whole_words_in_any_case() -> None:
    assert named_days(DAYS, "mondays are bad, how about FRIDAY?") == ["Monday", "Friday"]
    assert named_days(DAYS, "Sundayish or Mon") == []


def test_day_prompt_placeholders_are_checked_at_load() -> None:
    data = config_dict("schedule_meeting_dow")
    data["params"]["day_prompt"] = "{transcript} {weather}?"
    with pytest.raises(ConfigError, match=r"params\.day_prompt.*weather"):
        spec_from_dict(data)


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
    for key in ("scenario", "params", "payoff", "domain", "message_prompt"):
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


def test_the_away_day_rule_is_a_new_domain_version() -> None:
    # Solved records are resumed by a key holding the domain's fingerprint: records paid under
    # the old rule must not be reused, while the model's cached readings stay valid.
    from dataclasses import replace

    from gtsteer.domains import get_domain

    meeting = get_domain("schedule_meeting")  # 3: the greedy responder reads the proposal
    assert meeting.fingerprint().startswith("schedule_meeting@3[")
    assert replace(meeting, version=1).fingerprint() == meeting.fingerprint().replace("@3", "")
    assert "@" not in get_domain("fruit_trade").fingerprint()  # never re-versioned: unchanged
