"""The embedded Qwen2.5-Coder Instruct models, joined from their data wheels. Slow: each test
runs the model, briefly. The 0.5B is installed by `make setup` (extra `qwen05`); the 1.5B is
the optional extra `qwen15` and its test skips without it."""

from __future__ import annotations

from importlib import metadata

import pytest

from gtsteer.llm import LLM
from gtsteer.llm.backends.local import LocalBackend
from gtsteer.llm.backends.local.models import QWEN_05B, QWEN_15B
from gtsteer.llm.types import GenerationRequest, Message

pytestmark = pytest.mark.slow


def installed(model) -> bool:
    try:
        return all(metadata.version(p) == model.version for p in model.packages)
    except metadata.PackageNotFoundError:
        return False


@pytest.fixture(scope="module")
def qwen() -> LLM:
    return LLM("local:qwen2.5-coder-0.5b", use_cache=False)


def test_qwen_is_joined_checked_and_prompted_as_a_chat_model(qwen: LLM) -> None:
    backend = qwen.backend
    assert isinstance(backend, LocalBackend)
    backend.llama()
    assert backend.path is not None and backend.path.name == QWEN_05B.file_name
    assert backend.path.stat().st_size == QWEN_05B.size
    assert backend.chat and backend.identity()["prompting"] == "chat"
    rendered = backend.render(GenerationRequest(prompt="Hello"))
    assert rendered == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
    )
    out = qwen.generate_sync("Hello", max_tokens=8, temperature=0.0)
    assert out.text.strip() and out.usage.completion_tokens <= 8


def test_an_opened_assistant_turn_is_continued(qwen: LLM) -> None:
    backend = qwen.backend
    assert isinstance(backend, LocalBackend)
    messages = [Message(role="user", content="Bob asks Alice for a day.\nAlice:"),
                Message(role="assistant", content="Alice:")]
    rendered = backend.render(GenerationRequest(messages=messages))
    assert rendered.endswith("Alice:<|im_end|>\n<|im_start|>assistant\nAlice:")


@pytest.mark.skipif(not installed(QWEN_15B), reason="Qwen2.5-Coder 1.5B parts not installed "
                    "(optional: pip install -e '.[qwen15]', 1.1 GB)")
def test_qwen_15b_answers() -> None:
    llm = LLM("local:qwen2.5-coder-1.5b", use_cache=False)
    out = llm.generate_sync("Hello", max_tokens=8, temperature=0.0)
    assert isinstance(llm.backend, LocalBackend) and llm.backend.path is not None
    assert llm.backend.path.stat().st_size == QWEN_15B.size
    assert out.text.strip()
