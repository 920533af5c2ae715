"""Structured output: retry with feedback that names the problem, then a typed error."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from gtsteer.llm import (
    LLM,
    Backend,
    GenerationRequest,
    RawCompletion,
    StructuredOutputError,
)
from gtsteer.llm.structured import choice_model, extract_json, problems_of


class Vote(BaseModel):
    who: Literal["Akira", "Yuki"]
    reason: str = Field(max_length=80)


VALID = '{"who": "Yuki", "reason": "she dodged the question"}'
NOT_JSON = "I think Yuki is the werewolf, honestly."
OUT_OF_ENUM = '{"who": "Zed", "reason": "gut feeling"}'


class ScriptedBackend(Backend):
    """Replays fixed answers in order and records every request it received."""

    kind = "scripted"

    def __init__(self, replies: list[str]):
        super().__init__("scripted-1")
        self.replies = list(replies)
        self.requests: list[GenerationRequest] = []

    async def complete(
        self, request: GenerationRequest, json_schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        self.requests.append(request)
        return RawCompletion(text=self.replies.pop(0))

    @property
    def prompts(self) -> list[str]:
        return [r.as_text() for r in self.requests]


def test_third_attempt_succeeds_and_feedback_names_the_problems() -> None:
    backend = ScriptedBackend([NOT_JSON, OUT_OF_ENUM, VALID])
    llm = LLM("scripted", backend=backend)
    result = llm.structured_sync("Who do you vote for?", Vote)

    assert result.value == Vote(who="Yuki", reason="she dodged the question")
    assert result.attempts == 3
    assert result.raw == VALID
    assert result.cached is False
    assert len(backend.requests) == 3
    first, second, third = backend.prompts
    # Without a grammar the schema itself is spelled out in the prompt.
    assert "JSON schema" in first and '"who"' in first
    assert "not valid JSON" not in first
    assert "not valid JSON" in second
    assert NOT_JSON in second  # the model sees what it said
    assert "`who` must be one of: Akira, Yuki" in third
    assert "(got 'Zed')" in third
    usage = llm.usage
    assert (usage.new_calls, usage.retries, usage.failures) == (3, 2, 0)


def test_feedback_for_chat_messages_is_an_assistant_then_user_turn() -> None:
    backend = ScriptedBackend([OUT_OF_ENUM, VALID])
    llm = LLM("scripted", backend=backend)
    result = llm.structured_sync([{"role": "user", "content": "Vote now."}], Vote)
    assert result.attempts == 2
    retry = backend.requests[1].messages
    assert retry is not None
    assert [m.role for m in retry[-2:]] == ["assistant", "user"]
    assert retry[-2].content == OUT_OF_ENUM
    assert "`who` must be one of: Akira, Yuki" in retry[-1].content


def test_exhausted_attempts_raise_a_typed_error_with_the_last_raw_output() -> None:
    last = '{"who": "Akira"}'
    backend = ScriptedBackend([NOT_JSON, OUT_OF_ENUM, last])
    llm = LLM("scripted", backend=backend)
    with pytest.raises(StructuredOutputError) as info:
        llm.structured_sync("Who do you vote for?", Vote)
    error = info.value
    assert error.attempts == 3
    assert error.last_raw == last
    assert error.problems == ["`reason` is missing"]
    assert error.schema_name == "Vote"
    assert "No valid Vote after 3 attempts" in str(error)
    assert (llm.usage.failures, llm.usage.retries) == (1, 2)


def test_attempts_argument_bounds_the_tries() -> None:
    backend = ScriptedBackend([NOT_JSON, VALID])
    llm = LLM("scripted", backend=backend)
    with pytest.raises(StructuredOutputError) as info:
        llm.structured_sync("Vote.", Vote, attempts=1)
    assert info.value.attempts == 1
    assert len(backend.requests) == 1


def test_a_structured_failure_is_not_cached() -> None:
    backend = ScriptedBackend([NOT_JSON, NOT_JSON, NOT_JSON, VALID, "never used"])
    llm = LLM("scripted", backend=backend)
    with pytest.raises(StructuredOutputError):
        llm.structured_sync("Who?", Vote)
    assert llm.cache is not None and len(llm.cache) == 0
    retried = llm.structured_sync("Who?", Vote)
    assert retried.cached is False and retried.attempts == 1
    hit = llm.structured_sync("Who?", Vote)
    assert hit.cached is True and hit.attempts == 0 and hit.value == retried.value
    assert len(backend.requests) == 4


def test_json_wrapped_in_prose_or_fences_is_accepted() -> None:
    wrapped = f"Sure! Here you go:\n```json\n{VALID}\n```"
    backend = ScriptedBackend([wrapped])
    result = LLM("scripted", backend=backend, use_cache=False).structured_sync("Vote", Vote)
    assert result.attempts == 1 and result.value.who == "Yuki"


def test_problem_texts_name_fields() -> None:
    value, problems = problems_of('{"who": "Yuki", "reason": "' + "x" * 90 + '"}', Vote)
    assert value is None
    assert len(problems) == 1 and problems[0].startswith("`reason`:")
    assert "80" in problems[0]
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("no braces here")


def test_choice_model_lists_the_options() -> None:
    model = choice_model(["logos", "pathos", "ethos"])
    assert model.model_validate({"choice": "ethos"}).choice == "ethos"  # type: ignore[attr-defined]
    _, problems = problems_of('{"choice": "mythos"}', model)
    assert problems == ["`choice` must be one of: logos, pathos, ethos (got 'mythos')"]


def test_raw_newlines_inside_strings_are_accepted() -> None:
    """llama.cpp's JSON grammar lets a literal newline into a string; that is still an answer."""
    from pydantic import BaseModel

    from gtsteer.llm.structured import problems_of

    class Notes(BaseModel):
        notes: str

    value, problems = problems_of('{"notes": "line one\nline two"}', Notes)
    assert problems == []
    assert value is not None and value.notes == "line one\nline two"
