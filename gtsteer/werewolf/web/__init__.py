"""Werewolf in the browser: lobby, live table, human seat, god view and replay (FastAPI + SSE).

    from gtsteer.werewolf.web import build_app
    app = build_app("games.sqlite", models=["fake"])

The server decides what each viewer may see (`gtsteer.werewolf.visibility`); pages are static
shells and vanilla JS, with nothing fetched from outside the server.
"""

from gtsteer.llm.extras import require

# FastAPI and uvicorn are the `web` extra: without them, one line naming it (exit 2).
for _module in ("fastapi", "uvicorn"):
    require(_module, "web", "The Werewolf web app (gtsteer werewolf serve)")

from gtsteer.werewolf.events import step_events  # noqa: E402
from gtsteer.werewolf.visibility import GOD, PUBLIC, Viewer, for_viewer  # noqa: E402
from gtsteer.werewolf.web.app import create_app  # noqa: E402
from gtsteer.werewolf.web.manager import GameManager  # noqa: E402
from gtsteer.werewolf.web.server import build_app, is_loopback, serve  # noqa: E402

__all__ = ["GOD", "PUBLIC", "GameManager", "Viewer", "build_app", "create_app", "for_viewer",
           "is_loopback", "serve", "step_events"]
