"""Test doubles a user of gtsteer needs too, as `numpy.testing` and `pettingzoo.test`: a loopback
OpenAI-compatible server (real HTTP, so litellm, timeouts and retries run as against a provider)
and scripted backends (`backends`). Nothing here loads a model or writes a file.

    from gtsteer.testing import LoopbackServer
    with LoopbackServer() as server:
        llm = LLM("openai/any", api_base=server.base_url)
"""

from gtsteer.testing.backends import EchoingFake, ScriptedBackend
from gtsteer.testing.loopback import LoopbackServer, Responder, TopLogprobs, default_responder

__all__ = ["EchoingFake", "LoopbackServer", "Responder", "ScriptedBackend", "TopLogprobs",
           "default_responder"]
