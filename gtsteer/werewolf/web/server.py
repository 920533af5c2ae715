"""Start the web app with uvicorn (`gtsteer werewolf serve`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from gtsteer.llm import LLM
from gtsteer.werewolf.web.app import create_app
from gtsteer.werewolf.web.guard import allowed_hosts, is_loopback
from gtsteer.werewolf.web.manager import GameManager

NO_AUTH_WARNING = (
    "WARNING: binding to {host}, which is not a loopback address. The werewolf server has no "
    "user accounts: anyone who can reach this port can create and watch games, spend the "
    "configured models' API credit, and open god views of bot-only games. Only seat tokens "
    "protect a human player's seat."
)


__all__ = ["build_app", "is_loopback", "serve"]

#: The server runs uvicorn's h11 protocol (whatever else is installed) with this cap on a
#: request head. uvicorn has no deadline for a head, so a client that never finishes one holds
#: a socket and at most this many buffered bytes (a longer head is answered 400), never a
#: request or a thread (docs/WEREWOLF.md). Bodies have their deadline in `guard.RequestGuard`.
MAX_HEAD_BYTES = 16 * 1024


def build_app(db: str | Path, models: list[str],
              llm_factory: Callable[[str], LLM] | None = None,
              hosts: Iterable[str] | None = None):
    """The app; `hosts` are the Host names it answers (default: the loopback names)."""
    return create_app(GameManager(db, models, llm_factory=llm_factory),
                      hosts=allowed_hosts("127.0.0.1") if hosts is None else hosts)


def serve(host: str, port: int, db: str | Path, models: list[str],
          warn: Callable[[str], None] = print, allow_hosts: Iterable[str] = ()) -> None:
    import uvicorn

    if not is_loopback(host):
        warn(NO_AUTH_WARNING.format(host=host))
    uvicorn.run(build_app(db, models, hosts=allowed_hosts(host, allow_hosts)), host=host,
                port=port, log_level="info", timeout_graceful_shutdown=5, http="h11",
                h11_max_incomplete_event_size=MAX_HEAD_BYTES)

