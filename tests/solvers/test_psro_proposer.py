"""What PSRO's proposer is shown, and what a proposer with nothing usable means (issue 57).

Before: the prompt never showed the scenario, and its answer example came from a fixed pool
of tones, which small proposers copied word for word into a day domain (22 of 35 answers);
a proposer that produced nothing usable ended the run as `converged: true`.
"""

from __future__ import annotations

import re

import pytest
from domain_support import config_dict
from psro_helpers import STRENGTH_CONFIG, CountingBackend, ScriptedProposer, llm_for

from gtsteer.binding import ConfigError, generate_instances, make_game
from gtsteer.domains import load_spec, spec_from_dict
from gtsteer.llm import LLM
from gtsteer.solvers.psro import NO_CANDIDATE, PSROConfig, run_psro

#: The tone pool every proposer prompt drew its answer example from before.
OLD_TONE_POOL = {"playful", "formal", "brief", "warm", "skeptical", "urgent", "humorous",
                 "patient", "blunt", "flattering", "curious", "apologetic", "confident",
                 "diplomatic", "stubborn"}


def meeting_games(days: list[str], **changes):
    data = {**config_dict("schedule_meeting_dow_start"), **changes}
    data["actions"] = {"day": days}
    spec = spec_from_dict(data, "meeting-start.yaml")
    llm = LLM("fake")
    return [make_game(spec, inst, llm) for inst in generate_instances(spec, 1)]


def first_prompt(games, **config) -> str:
    proposer = ScriptedProposer({"proposer": [["Tuesday"]], "responder": [["Wednesday"]]})
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=1, candidates=2, **config))
    return result.iterations[0].oracles[0].calls[0].prompt


@pytest.mark.parametrize("operator", ["shotgun", "better", "trajectory"])
def test_a_day_domain_prompt_shows_the_scenario_and_the_days_and_no_tone(operator) -> None:
    prompt = first_prompt(meeting_games(["Monday", "any"]), operator=operator)
    assert ("Scenario: Proposer and Responder need to pick one day of the week for a meeting."
            in prompt)
    assert "Monday" in prompt
    words = set(re.findall(r"[a-z]+", prompt.lower()))
    assert words.isdisjoint(OLD_TONE_POOL), words & OLD_TONE_POOL
    if operator != "trajectory":  # the trajectory prompt lists the values with their payoffs
        assert "* Monday\n* any\n" in prompt  # the population, as a list to continue
        # the answer example is the population itself (OpenSpiel's list continuation)
        assert '{"instructions": ["Monday"]}' in prompt


def test_from_any_alone_the_example_shows_the_format_without_values() -> None:
    prompt = first_prompt(meeting_games(["any"]))
    assert "* any\n" in prompt and '{"instructions": ["..."]}' in prompt
    assert "need to pick one day of the week" in prompt


def test_config_examples_are_shown_and_rotate_outside_the_population() -> None:
    examples = ["Tuesday", "Wednesday", "Thursday"]
    prompt = first_prompt(meeting_games(["Monday", "any"], psro={"examples": examples}))
    assert "Examples of day values: Tuesday, Wednesday, Thursday." in prompt
    shown = re.search(r'Answer format[^:]*: (\{.*\})', prompt)
    assert shown is not None
    values = re.findall(r'"([A-Z]\w+)"', shown.group(1))
    assert len(values) == 2 and set(values) <= set(examples)


@pytest.mark.parametrize(("examples", "problem"), [
    (["calm", "any"], "baseline"),
    (["calm", "Calm"], "duplicates"),
    (["a|b"], "has | or ="),
    (["x" * 61], "longer than 60"),
])
def test_bad_psro_examples_are_refused_at_load(examples, problem) -> None:
    data = config_dict("trade_fruit_tone")
    data["psro"] = {"examples": examples}
    with pytest.raises(ConfigError, match=r"field `psro\.examples`.*" + re.escape(problem)):
        spec_from_dict(data, "fruit.yaml")


def test_an_unknown_psro_field_is_refused() -> None:
    data = config_dict("trade_fruit_tone")
    data["psro"] = {"exampels": ["calm"]}
    with pytest.raises(ConfigError, match=r"psro\.exampels.*unknown field"):
        spec_from_dict(data, "fruit.yaml")


def strength_games():
    spec = load_spec(STRENGTH_CONFIG)
    llm = llm_for(CountingBackend())
    return [make_game(spec, inst, llm) for inst in generate_instances(spec, 1)]


@pytest.mark.parametrize("proposer_answers", [
    ["not JSON at all"],  # unparsable
    [["calm", "ANY", "Assertive."]],  # duplicates and the baseline only
])
def test_a_proposer_with_nothing_usable_is_its_own_stop_state(proposer_answers) -> None:
    # The strength game's RD meta-strategy is an equilibrium (assertive), so the gap test
    # holds; the responder's oracle scores "timid" and finds no improvement. Before, the run
    # stopped here as `converged: true` though the proposer's oracle had searched nothing.
    proposer = ScriptedProposer({"proposer": proposer_answers, "responder": [["timid"]]})
    result = run_psro(strength_games(), llm_for(proposer), PSROConfig(iterations=3, candidates=2))
    first = result.iterations[0]
    p0, p1 = first.oracles
    assert p0.no_candidate and p0.reason == "no valid candidate"
    assert not p1.no_candidate and [c.instruction for c in p1.candidates] == ["timid"]
    assert first.gap <= first.gap_limit and first.added == [None, None]
    assert first.stop == NO_CANDIDATE and not first.converged
    assert result.stop_reason == NO_CANDIDATE and not result.converged
    assert len(result.iterations) == 1


def test_a_run_whose_oracles_all_scored_candidates_still_converges() -> None:
    proposer = ScriptedProposer({"proposer": [["timid"]], "responder": [["meek and shy"]]})
    result = run_psro(strength_games(), llm_for(proposer), PSROConfig(iterations=3, candidates=2))
    assert result.converged and result.stop_reason == "converged"
    assert result.iterations[0].stop == "converged"
