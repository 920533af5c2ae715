"""Messages from instruct (chat) models: the prompt form, the stop rules and the cleaning.

`StopBackend` answers with a fixed text and applies stop strings the way llama.cpp does (the
text ends before the first stop found anywhere in it), so a stop rule that fires before the
content shows here as it does on the embedded chat models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gtsteer.binding import Instance, make_game, make_instance
from gtsteer.binding.prompts import clean_message, message_stop
from gtsteer.domains import load_spec
from gtsteer.llm import LLM, Backend
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

MEETING = Path(__file__).parents[2] / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"


class StopBackend(Backend):
    kind = "stops"

    def __init__(self, text: str, chat: bool, tokens: int = 10):
        super().__init__("stops")
        self.text, self.chat, self.tokens = text, chat, tokens
        self.requests: list[GenerationRequest] = []

    async def complete(self, request: GenerationRequest, json_schema: Any = None) -> RawCompletion:
        self.requests.append(request)
        text = self.text
        for stop in request.stop:
            text = text.split(stop)[0]
        return RawCompletion(text=text, usage=Usage(completion_tokens=self.tokens))


SPEC = load_spec(MEETING)
# The generated names of instance 0 (the proposer speaks first), written into the answers.
ALICE, BOB = make_instance(SPEC, 0).names


def first_message(text: str, chat: bool, tokens: int = 10) -> tuple[str, StopBackend]:
    backend = StopBackend(text.replace("Alice", ALICE).replace("Bob", BOB), chat, tokens)
    llm = LLM("stops", backend=backend, use_cache=False)
    game = make_game(SPEC, make_instance(SPEC, 0), llm)
    instruction = "Monday"
    history = (game.instructions(0).index(instruction), 0)  # the proposer's action, sample 0
    return game.message(history, [], 0, instruction), backend


def test_a_chat_answer_opening_with_a_blank_line_is_kept() -> None:
    """The message stop `\\n\\n` of base models ended such answers before any content ("...")."""
    text, backend = first_message("\n\nAlice: How about Monday, Bob?", chat=True)
    assert text == f"How about Monday, {BOB}?"
    request = backend.requests[0]
    assert "\n\n" not in request.stop and f"\n{BOB}:" in request.stop
    assert f"\n{ALICE}:" not in request.stop  # the speaker's own tag may open the answer


def test_a_chat_model_answers_as_the_speaker() -> None:
    """The domain's prompt is the user's turn; the assistant's turn opens with `Name:`."""
    _, backend = first_message("How about Monday?", chat=True)
    request = backend.requests[0]
    assert request.prompt is None and request.messages is not None
    user, opened = request.messages
    assert user.role == "user" and user.content.endswith(f"\n{ALICE}:")
    assert f"{ALICE} proposes Monday." in user.content  # the instruction, as for base models
    assert (opened.role, opened.content) == ("assistant", f"{ALICE}:")


def test_a_base_model_keeps_the_completion_prompt() -> None:
    text, backend = first_message(" How about Monday?\n\nBob: fine", chat=False)
    assert text == "How about Monday?"
    request = backend.requests[0]
    assert request.messages is None and request.prompt.endswith(f"\n{ALICE}:")
    assert request.stop[0] == "\n\n"


def test_an_answer_cut_at_the_token_limit_drops_its_unfinished_sentence() -> None:
    answer = "Let's meet on Monday. I am free all day and we could"
    text, _ = first_message(answer, chat=True, tokens=48)  # 48 = the config's max_tokens
    assert text == "Let's meet on Monday."
    text, _ = first_message(answer, chat=True, tokens=20)  # ended by the model itself
    assert text == answer


INST = Instance(index=0, seed=0, names=["Alice", "Bob"], private_info=[{}, {}], scenario="")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\n\nAlice: Monday works for me.", "Monday works for me."),
        ("**Alice:** Monday works for me.", "Monday works for me."),
        ("Alice (to Bob): Monday?", "Monday?"),
        ('"How about Monday, Bob?"', "How about Monday, Bob?"),
        ('"How about Monday?" Alice asks.', "How about Monday?"),
        ("Here is Alice's next message:\n\nHow about Monday?", "How about Monday?"),
        ("Alice:\nHow about\nMonday?", "How about Monday?"),
        ("How about Monday?\n\nBob: Monday is fine.", "How about Monday?"),
        ("I have two options:\n\nMonday or Friday.", "I have two options: Monday or Friday."),
        ("Monday suits me.\n\n(This message proposes Monday.)", "Monday suits me."),
        ("My options:\n\nBob: Monday?", "My options:"),
        ("I told Bob: come on Monday.", "I told Bob: come on Monday."),
        ("\n\n", "..."),
        # The tag written twice (SmolLM2 once answered fruit trading with "Iris:" alone after
        # its opened "Iris:" cue): no tag is left as the message.
        ("Alice:\nAlice:", "..."),
        ("Alice: **Alice:** Monday works for me.", "Monday works for me."),
    ],
)
def test_chat_cleaning(raw: str, clean: str) -> None:
    assert clean_message(raw, INST, chat=True) == clean


def test_stops_per_model_kind() -> None:
    assert message_stop(SPEC, INST) == ["\n\n", "\nAlice:", "\nBob:"]
    assert message_stop(SPEC, INST, speaker=0, chat=True) == ["\nBob:"]
