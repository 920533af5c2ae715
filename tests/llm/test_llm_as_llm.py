"""`as_llm` / `model_string`: the one place a driver's `llm` argument becomes a client."""

from __future__ import annotations

from pathlib import Path

from gtsteer.llm import LLM, as_llm, model_string
from gtsteer.runs.output import run_dir


def test_an_llm_is_passed_through_so_its_meter_is_shared():
    client = LLM("fake", use_cache=False)
    assert as_llm(client) is client
    assert model_string(client) == "fake"


def test_a_model_string_gets_a_new_client_of_that_model():
    first, second = as_llm("fake"), as_llm("fake")
    assert isinstance(first, LLM) and first.model == "fake"
    assert first is not second  # own usage meters; the disk cache is what they share


def test_model_string_equals_the_clients_model_without_building_one():
    assert model_string(" fake ") == as_llm(" fake ").model == "fake"
    assert model_string("openai/gpt-4o-mini") == "openai/gpt-4o-mini"


def test_a_string_and_its_client_give_the_same_run_folder():
    by_string = run_dir("solve", "gtsteer/configs/fruit.yaml", model_string("fake"), 0)
    by_client = run_dir("solve", "gtsteer/configs/fruit.yaml", model_string(LLM("fake")), 0)
    assert by_string == by_client == Path("results/fruit-fake-0")
