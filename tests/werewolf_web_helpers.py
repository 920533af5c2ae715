"""Shared builders for the werewolf web tests: a live uvicorn server, SSE reading, a canary model.

The canary backend is the fake model with a unique nonce written into every free-text output
(chat lines, vote and night reasons, notes, router reasons), so a test can tell where any text
a seat receives came from.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from gtsteer.llm import LLM, FakeBackend, GenerationRequest, RawCompletion
from lab.bench.servers import ThreadedServer

NONCE_RE = re.compile(r"zq\d{5}x")
_counter = itertools.count(1)


def nonce() -> str:
    return f"zq{next(_counter):05d}x"


def _resolve(schema: dict, root: dict) -> dict:
    ref = schema.get("$ref")
    if ref:
        return root.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {})
    return schema


def _stamp(value: Any, schema: dict, root: dict) -> Any:
    """Replace every free string (no enum, no const) with a nonce that fits its max length."""
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: _stamp(v, props.get(k, {}), root) for k, v in value.items()}
    if isinstance(value, list):
        return [_stamp(v, schema.get("items", {}), root) for v in value]
    if isinstance(value, str) and "enum" not in schema and "const" not in schema:
        return nonce()[: schema.get("maxLength", 64)]
    return value


class CanaryBackend(FakeBackend):
    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        raw = await super().complete(request, json_schema)
        if json_schema is None:
            return RawCompletion(text=f"{raw.text} {nonce()}", usage=raw.usage)
        value = _stamp(json.loads(raw.text), json_schema, json_schema)
        return RawCompletion(text=json.dumps(value), usage=raw.usage)


def canary_llm(model: str) -> LLM:
    return LLM(model, backend=CanaryBackend(model))


class LiveServer(ThreadedServer):
    """The web app on a free loopback port (fake model unless told otherwise)."""

    def __init__(self, db: Path, models: list[str] | None = None, llm_factory=None):
        super().__init__(db, models or ["fake"], llm_factory=llm_factory)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)


def read_events(client: httpx.Client, path: str, sink: list[tuple[dict, str]],
                headers: dict | None = None, timeout: float = 120) -> None:
    """Collect (event, raw line) from an SSE stream until it ends."""
    with client.stream("GET", path, headers=headers or {},
                       timeout=httpx.Timeout(timeout, read=timeout)) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                sink.append((event, line))
                if event["type"] == "end":
                    return


def stream_in_thread(client: httpx.Client, path: str, headers: dict | None = None):
    sink: list[tuple[dict, str]] = []
    t = threading.Thread(target=read_events, args=(client, path, sink, headers), daemon=True)
    t.start()
    return t, sink


def wait_for(predicate, timeout: float = 60, every: float = 0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError("condition not met in time")
