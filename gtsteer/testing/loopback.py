"""A loopback OpenAI-compatible chat server for tests and benchmarks.

Real HTTP (not a mocked transport) so that litellm, the OpenAI SDK, httpx, timeouts and
connection handling are all exercised exactly as against a provider. It answers
`POST .../chat/completions`, `POST .../completions` (a base model's text route: its `prompt`
reaches the responder as one user message, so a responder serves both routes; `paths` records
which was hit) and ollama's `POST /api/chat`, can sleep before answering, can
fail the next N requests with a chosen status (and `Retry-After`), can refuse `response_format`
types the way a server that lacks them does, returns `top_logprobs` when asked and told what to
return, and records how many requests it saw and how many were in flight at once.
Imported by tests (`from gtsteer.testing import LoopbackServer`) and by the lab's `bench llm`;
a user's own tests can point an `openai/...` model at its `base_url`. The lab's
`lab/bench/servers.py` starts the real thing instead: llama.cpp's servers as child processes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

#: Builds the reply content from the parsed request body.
Responder = Callable[[dict[str, Any]], str]
#: `(token, logprob)` alternatives of the first generated token, likeliest first.
TopLogprobs = Callable[[dict[str, Any]], list[tuple[str, float]]]


def default_responder(body: dict[str, Any]) -> str:
    """A deterministic reply that reflects the last message and the seed."""
    messages = body.get("messages") or [{"content": ""}]
    last = str(messages[-1].get("content", ""))
    return f"echo seed={body.get('seed')}: {last[-80:]}"


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops simultaneous connects, which the client only
    # retries after a 1 s SYN timeout: that, not the client, would then bound concurrency.
    request_queue_size = 128


class LoopbackServer:
    """ThreadingHTTPServer on 127.0.0.1 with an ephemeral port; use as a context manager."""

    def __init__(
        self,
        latency_s: float = 0.0,
        responder: Responder = default_responder,
        *,
        rejected_formats: tuple[str, ...] = (),
        top_logprobs: TopLogprobs | None = None,
        count_tokens: Callable[[str], int] | None = None,
    ):
        self.latency_s = latency_s
        self.responder = responder
        #: `response_format.type` values answered with llama-cpp-python's 500 (a validation
        #: error naming the field), e.g. ("json_schema",) for llama.cpp's server.
        self.rejected_formats = rejected_formats
        self.top_logprobs = top_logprobs
        #: The `usage` counts of a text (default: its words; a test may pass a tokenizer).
        self.count_tokens = count_tokens or (lambda text: len(text.split()))
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.authorizations: list[str] = []
        self._failures: list[tuple[int, str | None]] = []
        #: Raw faults for the next requests, one each (see `fault_next`).
        self._faults: list[str] = []
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- control ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, n: int, status: int = 429, retry_after: str | None = None) -> None:
        """Answer the next `n` requests with HTTP `status` (and a `Retry-After` header)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * n)

    def fault_next(self, n: int, fault: str) -> None:
        """Answer the next `n` requests with a fault a real server or proxy produces:
        `echo400`/`echo500` (an error whose text quotes the request's Authorization header),
        `echo200` (a 200 whose answer quotes it), `emptychoices` (200, `"choices": []`),
        `nullcontent` (200, `"content": null`), `badlp` (200, a logprobs entry without
        `logprob`), `badjson` (200, cut JSON), `html` (200, an HTML page), `close` (the
        connection dropped without an answer)."""
        with self._lock:
            self._faults.extend([fault] * n)

    def reset_counters(self) -> None:
        with self._lock:
            self.requests = 0
            self.max_in_flight = 0
            self.bodies.clear()
            self.paths.clear()
            self.arrivals.clear()
            self.authorizations.clear()

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- serving ------------------------------------------------------------------------

    def _admit(
        self, body: dict[str, Any], path: str, authorization: str
    ) -> tuple[int, str | None] | None:
        """Count the request; return a (status, Retry-After) to fail with, if one is queued."""
        with self._lock:
            self.requests += 1
            self.arrivals.append(time.monotonic())
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.bodies.append(body)
            self.paths.append(path)
            self.authorizations.append(authorization)
            return self._failures.pop(0) if self._failures else None

    def _next_fault(self) -> str | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _rejection(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """llama-cpp-python's answer to a `response_format` type it lacks (HTTP 500)."""
        kind = (body.get("response_format") or {}).get("type")
        if kind not in self.rejected_formats:
            return None
        message = (
            "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
            f"  Input should be 'text' or 'json_object' [type=literal_error, input_value='{kind}']"
        )
        return {"error": {"message": message, "type": "internal_server_error"}}

    def _logprobs(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """OpenAI's chat `logprobs` block (as vLLM and llama.cpp's server return it)."""
        if not body.get("logprobs") or self.top_logprobs is None:
            return None
        top = self.top_logprobs(body)[: int(body.get("top_logprobs") or 1)]
        first = top[0]
        return {
            "content": [
                {
                    "token": first[0],
                    "logprob": first[1],
                    "bytes": list(first[0].encode()),
                    "top_logprobs": [
                        {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top
                    ],
                }
            ]
        }

    def _ollama(self, body: dict[str, Any]) -> dict[str, Any]:
        """ollama's native `/api/chat` reply (not streamed)."""
        content = self.responder(body)
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {
            "model": body.get("model", "test-model"),
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt_words,
            "eval_count": len(content.split()),
        }

    def _text_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """`/v1/completions`' reply: the text, and `logprobs` (top alternatives per token) when
        asked for a count and told what to return."""
        prompt = str(body.get("prompt", ""))
        content = self.responder({**body, "messages": [{"role": "user", "content": prompt}]})
        choice: dict[str, Any] = {"index": 0, "text": content, "finish_reason": "stop",
                                  "logprobs": None}
        if body.get("logprobs") and self.top_logprobs is not None:
            top = self.top_logprobs(body)[: int(body["logprobs"])]
            choice["logprobs"] = {"tokens": [top[0][0]], "token_logprobs": [top[0][1]],
                                  "top_logprobs": [dict(top)], "text_offset": [0]}
        return {"id": f"cmpl-loopback-{self.requests}", "object": "text_completion",
                "created": int(time.time()), "model": body.get("model", "test-model"),
                "choices": [choice], "usage": self._usage([prompt], content)}

    def _usage(self, prompts: list[str], content: str) -> dict[str, int]:
        used, made = sum(map(self.count_tokens, prompts)), self.count_tokens(content)
        return {"prompt_tokens": used, "completion_tokens": made, "total_tokens": used + made}

    def _completion(self, body: dict[str, Any], content: str | None = None) -> dict[str, Any]:
        content = self.responder(body) if content is None else content
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }
        if (logprobs := self._logprobs(body)) is not None:
            choice["logprobs"] = logprobs
        return {
            "id": f"chatcmpl-loopback-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [choice],
            "usage": self._usage([str(m.get("content", "")) for m in body.get("messages", [])],
                                 content),
        }

    def _handler_class(self) -> type[_Handler]:
        class Handler(_Handler):
            loopback = self

        return Handler


class _Handler(BaseHTTPRequestHandler):
    """Answers one connection's requests for `loopback` (set by `LoopbackServer`)."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    loopback: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean

    def _send(
        self, status: int, payload: dict[str, Any], retry_after: str | None = None
    ) -> None:
        self._raw(status, json.dumps(payload).encode(), retry_after=retry_after)

    def _raw(self, status: int, data: bytes, kind: str = "application/json",
             retry_after: str | None = None) -> None:
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _fault(self, fault: str, body: dict[str, Any], authorization: str) -> None:
        if fault in ("echo400", "echo500"):
            message = f"upstream failed for {authorization}"
            self._send(int(fault[4:]), {"error": {"message": message,
                                                  "type": "server_error"}})
        elif fault == "echo200":
            self._send(200, self.loopback._completion(body, f"you sent {authorization}"))
        elif fault == "emptychoices":
            self._send(200, {**self.loopback._completion(body), "choices": []})
        elif fault == "nullcontent":
            reply = self.loopback._completion(body)
            reply["choices"][0]["message"]["content"] = None
            self._send(200, reply)
        elif fault == "badlp":
            reply = self.loopback._completion(body)
            reply["choices"][0]["logprobs"] = {"content": [{"token": "Paris"}]}
            self._send(200, reply)
        elif fault == "badjson":
            self._raw(200, json.dumps(self.loopback._completion(body)).encode()[:40])
        elif fault == "html":
            self._raw(200, b"<html><body>Bad gateway</body></html>", "text/html")
        elif fault == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            raise ValueError(f"unknown fault {fault!r}")

    def do_POST(self) -> None:
        # An api_base with a query (`/v1?key=...`) makes the SDK append the route after
        # the query, so route on the whole request target.
        path = self.path
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        ollama = path.endswith("/api/chat")
        text = path.endswith("/completions") and not path.endswith("chat/completions")
        if not (ollama or text or path.endswith("chat/completions")):
            self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        authorization = self.headers.get("Authorization", "")
        failure = self.loopback._admit(body, path, authorization)
        fault = self.loopback._next_fault()
        try:
            if self.loopback.latency_s:
                time.sleep(self.loopback.latency_s)
            if failure is not None:
                status, retry_after = failure
                kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(
                    status, "server_error"
                )
                message = f"loopback: injected HTTP {status}"
                error = {"error": {"message": message, "type": kind}}
                self._send(status, error, retry_after)
                return
            if fault is not None:
                self._fault(fault, body, authorization)
                return
            if (rejection := self.loopback._rejection(body)) is not None:
                self._send(500, rejection)
                return
            self._send(200, self.loopback._ollama(body) if ollama
                       else self.loopback._text_completion(body) if text
                       else self.loopback._completion(body))
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (its timeout); nothing to answer
        finally:
            self.loopback._leave()
