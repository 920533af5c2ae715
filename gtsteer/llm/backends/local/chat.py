"""Render a request as the text a local model reads: completion-style or through a chat template.

Domains write one prompt. A base model continues it as plain text; an instruct model gets it as
the user's turn, rendered with the chat template stored in its GGUF (`tokenizer.chat_template`,
through llama-cpp-python's `Jinja2ChatFormatter`, as `create_chat_completion` does), ending with
the assistant's generation prompt (followed by the start of the answer when the last message
is the assistant's). The rendered text is then evaluated like any completion, so the prefix
cache and grammar sampling apply to chat models unchanged.
"""

from __future__ import annotations

from typing import Any

from gtsteer.llm.errors import ModelConfigError
from gtsteer.llm.types import GenerationRequest

CHAT_TEMPLATE_KEY = "tokenizer.chat_template"


def has_chat_template(llm: Any) -> bool:
    return bool(llm.metadata.get(CHAT_TEMPLATE_KEY))


class ChatTemplate:
    """The GGUF's own chat template, rendered with its BOS/EOS token texts."""

    def __init__(self, llm: Any):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get(CHAT_TEMPLATE_KEY)
        if not template:
            raise ModelConfigError(
                f"The model {llm.model_path} has no `{CHAT_TEMPLATE_KEY}` in its GGUF metadata, "
                "so it cannot be prompted as a chat model."
            )
        self.bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else ""
        self.eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() >= 0 else ""
        self._formatter = Jinja2ChatFormatter(
            template=template, eos_token=self.eos, bos_token=self.bos, add_generation_prompt=True
        )

    def render(self, request: GenerationRequest) -> str:
        """A final assistant message is the start of the answer, continued rather than closed
        (as `continue_final_message` in transformers' `apply_chat_template`): a caller opens
        the assistant's turn with a speaker's `Name:` to have it answer as that speaker."""
        messages: list[Any]  # plain role/content dicts: all the template reads
        if request.messages is not None:
            messages = [{"role": m.role, "content": m.content} for m in request.messages]
        else:
            messages = [{"role": "user", "content": request.prompt or ""}]
        opened = ""
        if messages and messages[-1]["role"] == "assistant":
            opened = messages.pop()["content"]
        return self._formatter(messages=messages).prompt + opened
