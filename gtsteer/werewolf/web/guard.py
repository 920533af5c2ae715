"""Checks every request passes before the app sees it (docs/WEREWOLF.md):

- **Host** (DNS rebinding): only the names the server was started for are answered (421);
- **Origin** (CSRF): a POST needs this server's own `Origin`, or, without one (curl, scripts),
  `Content-Type: application/json`, which no page sends cross-site without a CORS preflight
  this server never grants; a foreign Origin or cross-site `Sec-Fetch-Site` gets 403;
- **Size**: bodies over `MAX_BODY_BYTES` get 413, before anything large is read;
- **Time**: a body must arrive whole within `BODY_TIMEOUT_S` of its head (408), so a stalled
  client holds no worker.

A pure ASGI middleware (Starlette's TrustedHostMiddleware splits `[::1]:8000` at the first
colon), so the rules sit in one place with one JSON error shape.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

#: The largest body the API accepts: a 12-seat custom cast with per-seat models is about 6 KB
#: of JSON (36 KB if every character were \u-escaped).
MAX_BODY_BYTES = 64 * 1024
#: The longest a request body may take to arrive, whole (the API's bodies are a few KB).
BODY_TIMEOUT_S = 10.0
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_BINDS = ("0.0.0.0", "::", "")
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
SAME_SITE_FETCH = {"same-origin", "none"}


def host_name(host: str) -> str:
    """The name part of a Host header or URL netloc (`[::1]:8000` -> `::1`), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a hostname other than localhost may resolve anywhere


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> set[str]:
    """The Host names a server bound to `bind` answers, with the `--allow-host` names (`*`
    allows every name)."""
    names = {host_name(bind)} if bind not in WILDCARD_BINDS else set()
    if bind in WILDCARD_BINDS or is_loopback(bind):
        names.update(LOOPBACK_NAMES)
    if bind in WILDCARD_BINDS:
        hostname = socket.gethostname()
        names.update({hostname.lower(), socket.getfqdn().lower()})
        try:
            names.update(socket.gethostbyname_ex(hostname)[2])
        except OSError:
            pass
    names.update(host_name(h) if h != "*" else "*" for h in extra)
    return {n for n in names if n}


class RequestGuard:
    def __init__(self, app: Any, hosts: Iterable[str], max_body: int = MAX_BODY_BYTES,
                 body_timeout_s: float = BODY_TIMEOUT_S):
        self.app = app
        self.hosts = set(hosts)
        self.max_body = max_body
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan (the app has no websockets)
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if "*" not in self.hosts and host_name(host) not in self.hosts:
            await refuse(send, 421, f"this server does not answer for host {host!r} "
                         "(start it with --allow-host NAME to add a name)")
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await refuse(send, 413, f"the request body is over {self.max_body} bytes")
            return
        if scope["method"] not in UNSAFE_METHODS:
            await self.app(scope, receive, send)
            return
        problem = cross_site(headers, host)
        if problem:
            await refuse(send, 403, problem)
            return
        body = bytearray()
        # One deadline for the whole body, not one per chunk: a byte every few seconds would
        # otherwise hold the request for days.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                await refuse(send, 408, f"the request body did not arrive within"
                             f" {self.body_timeout_s:g} s")
                return
            if message["type"] != "http.request":  # the client went away: nobody to answer
                return
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await refuse(send, 413, f"the request body is over {self.max_body} bytes")
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, replay(bytes(body), receive), send)


def cross_site(headers: dict[str, str], host: str) -> str | None:
    """Why a state-changing request lacks same-origin proof, or None when it has it."""
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in SAME_SITE_FETCH:
        return f"cross-site request refused (Sec-Fetch-Site: {fetch_site})"
    origin = headers.get("origin")
    if origin is not None:
        if origin == "null" or urlsplit(origin).netloc.lower() != host.lower():
            return f"cross-origin request refused (Origin {origin!r} is not this server)"
        return None
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        return ("a request that changes something needs Content-Type: application/json "
                "(or this server's own Origin)")
    return None


def replay(body: bytes, receive: Any) -> Any:
    """A `receive` that hands the app the buffered body, then the client's later messages
    (a disconnect, which streaming responses wait for)."""
    sent = False

    async def wrapped() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return wrapped


async def refuse(send: Any, status: int, message: str) -> None:
    payload = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": payload})


class SecurityHeaders:
    """Adds `headers` to every response; pure ASGI, as BaseHTTPMiddleware logs an ERROR for a
    request the guard drops because its client went away mid-body."""

    def __init__(self, app: Any, headers: dict[str, str]):
        self.app = app
        self.headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                        for k, v in headers.items()]

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = {k for k, _ in self.headers}

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": [*kept, *self.headers]}
            await send(message)

        await self.app(scope, receive, with_headers)
