"""Werewolf in the browser: lobby, live table, human seat, god view and replay (FastAPI + SSE).

    from gtsteer.werewolf.web import build_app
    app = build_app("games.sqlite", models=["fake"])

The server decides what each viewer may see (`gtsteer.werewolf.visibility`); pages are static
shells and vanilla JS, with nothing fetched from outside the server.
"""

from gtsteer.werewolf.events import step_events
from gtsteer.werewolf.visibility import GOD, PUBLIC, Viewer, for_viewer
from gtsteer.werewolf.web.app import create_app
from gtsteer.werewolf.web.manager import GameManager
from gtsteer.werewolf.web.server import build_app, is_loopback, serve

__all__ = ["GOD", "PUBLIC", "GameManager", "Viewer", "build_app", "create_app", "for_viewer",
           "is_loopback", "serve", "step_events"]
