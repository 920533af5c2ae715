"""Ending a chat model's message early (issue 45): generation stops once the message the chat
cleaner keeps is final, and the kept message is the one the full answer gives.

The property is checked on answers built at random from the pieces small chat models write
(their own or another player's tag, lead-in lines, quoted lines, sentences with and without an
end, blank lines, commentary after the message), cut into token-like chunks: at the first chunk
where `chat_message_decided` says yes, cleaning what was generated so far (not cut at the token
limit) gives the message of the whole answer, cut at the limit or not.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from gtsteer.binding import Instance
from gtsteer.binding.prompts import (
    CHAT_MESSAGE_END,
    chat_message_decided,
    clean_chat_message,
    message_end,
)
from gtsteer.llm import LLM, Backend
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

INST = Instance(index=0, seed=0, names=["Alice", "Bob"], private_info=[{}, {}], scenario="")

PIECES = [
    "Alice:", "**Alice:**", "Bob:", "**Bob:**", "Alice (to Bob):", "Here is Alice's message:",
    "My options:", "Let's meet on Monday.", "How about Tuesday?", "Great!", "Sure, Friday works",
    '"How about Monday, Bob?"', '"Monday works," Alice says.',
    '"Hi Bob. Monday is fine," she says.',
    "(This message proposes Monday.)", "I am free all day and we could", "Mr. Bob agrees.", "...",
]
SEPARATORS = ["\n\n", "\n", " ", "\n \n", "\n\n\n"]


def random_answer(rng: random.Random) -> str:
    parts = [rng.choice(["", "\n", "\n\n", " "])]
    for _ in range(rng.randint(1, 6)):
        parts += [rng.choice(PIECES), rng.choice(SEPARATORS)]
    return "".join(parts[:-1] if rng.random() < 0.5 else parts)


def chunks(text: str, rng: random.Random) -> list[str]:
    """`text` in pieces of 1-5 characters, as tokens come."""
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 5)
        out.append(text[i:i + n])
        i += n
    return out


def test_a_decided_prefix_keeps_the_message_of_the_whole_answer() -> None:
    rng = random.Random(45)
    stopped_early = 0
    for _ in range(3000):
        answer = random_answer(rng)
        so_far = ""
        for chunk in chunks(answer, rng):
            so_far += chunk
            if chat_message_decided(so_far, INST):
                kept = clean_chat_message(so_far, INST, cut=False)
                assert kept == clean_chat_message(answer, INST, cut=False), (so_far, answer)
                assert kept == clean_chat_message(answer, INST, cut=True), (so_far, answer)
                stopped_early += so_far != answer
                break
    # The rule is not vacuous: many of these answers end early.
    assert stopped_early > 500


@pytest.mark.parametrize(
    ("so_far", "decided"),
    [
        ("Let's meet on Monday.", False),  # no blank line yet: the paragraph may go on
        ("Let's meet on Monday.\n\n", True),
        ("Alice: Let's meet on Monday.\n\n", True),
        ("Alice:\n\n", False),  # a tag alone, the message is still to come
        ("Here is Alice's message:\n\n", False),  # a lead-in introduces the next paragraph
        ("My options:\n\n", False),
        ("Sure, Friday works\n\n", False),  # no sentence end: a cut would drop it
        ("Monday?\nBob: fine.", False),  # the paragraph goes on: it may yet be a lead-in
        ("Mr. Bob agrees.\nBob:\n\n", False),  # a lead-in if another paragraph follows
        ('"Hi Bob. Monday is fine," she says.\n\n', False),  # the kept message lacks an end
        ("\n\n", False),
    ],
)
def test_when_a_message_is_decided(so_far: str, decided: bool) -> None:
    assert chat_message_decided(so_far, INST) is decided


class RecordingBackend(Backend):
    kind = "recording"

    def __init__(self) -> None:
        super().__init__("recording")
        self.requests: list[GenerationRequest] = []

    async def complete(self, request: GenerationRequest, json_schema: Any = None) -> RawCompletion:
        self.requests.append(request)
        return RawCompletion(text="Monday?", usage=Usage(completion_tokens=2))


def test_the_rule_travels_to_the_backend_and_into_the_cache_key(tmp_path: Any) -> None:
    backend = RecordingBackend()
    llm = LLM("recording", backend=backend)
    ended = asyncio.run(llm.generate("Hi", seed=1, **message_end(INST, chat=True)))
    assert backend.requests[0].end_rule == CHAT_MESSAGE_END
    assert backend.requests[0].decided is not None
    assert backend.requests[0].decided("Monday works.\n\n") is True
    # The same prompt without the rule is another answer (it may run on past the message).
    plain = asyncio.run(llm.generate("Hi", seed=1))
    assert (ended.cached, plain.cached) == (False, False) and len(backend.requests) == 2
    again = asyncio.run(llm.generate("Hi", seed=1, **message_end(INST, chat=True)))
    assert again.cached and len(backend.requests) == 2
    # A base model's answer ends at its stop strings: no rule.
    assert message_end(INST, chat=False) == {}


def test_a_rule_needs_its_name() -> None:
    with pytest.raises(ValueError, match="end_rule"):
        GenerationRequest(prompt="Hi", decided=lambda text: True)
