"""The FastAPI app: pages (static shells filled by vanilla JS), the JSON API and the event streams.

A request sees a seat's view with its seat token (header or HttpOnly cookie), the god view with
`?view=god` (for a game with a human seat, only once it ends), else the public table.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from gtsteer.werewolf.playstyles import PLAYSTYLES
from gtsteer.werewolf.roles import ROLES
from gtsteer.werewolf.rules import MAX_PLAYERS, MIN_PLAYERS, RULES_TEXT
from gtsteer.werewolf.visibility import GOD, PUBLIC, Viewer
from gtsteer.werewolf.web.guard import RequestGuard, SecurityHeaders
from gtsteer.werewolf.web.live import LiveGame, WebError, stream_payload
from gtsteer.werewolf.web.manager import GameManager, rule_options, scaled_discussion
from gtsteer.werewolf.web.schemas import Act, Control, CreateGame, JoinSeat

HERE = Path(__file__).parent
log = logging.getLogger("gtsteer.werewolf.web")
KEEPALIVE_S = 15.0
SECURITY_HEADERS = {
    # Everything the pages use is served from here; nothing is fetched from elsewhere.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def cookie_name(game_id: str) -> str:
    return f"ww_seat_{game_id}"


# long: FastAPI's app factory: one short route per endpoint (about twenty), each a closure over
# `manager` and the seat and viewer helpers beside it; APIRouter modules would split it further.
def create_app(manager: GameManager, hosts: Iterable[str]) -> FastAPI:
    """The app, answering only requests whose Host is one of `hosts` (web/guard.py)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(manager.start)
        yield
        await run_in_threadpool(manager.stop)

    app = FastAPI(title="gtsteer werewolf", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.manager = manager
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    # Added first, so it runs inside the headers middleware: refusals get the headers too.
    app.add_middleware(RequestGuard, hosts=hosts)
    app.add_middleware(SecurityHeaders, headers=SECURITY_HEADERS)

    @app.exception_handler(WebError)
    async def web_error(request: Request, exc: WebError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return JSONResponse({"error": "; ".join(parts) or "invalid request"}, status_code=422)

    def viewer_for(request: Request, game: LiveGame, view: str | None) -> Viewer:
        token = request.headers.get("x-seat-token") or request.cookies.get(
            cookie_name(game.game_id))
        if view == "god":
            manager.god_allowed(game)
            return GOD
        if view not in (None, "", "seat", "public"):
            raise WebError(422, f"view must be god, seat or public (got {view!r})")
        if view == "public":
            return PUBLIC
        seat = manager.seat_of(game.game_id, token)
        if token and seat is None and request.headers.get("x-seat-token"):
            raise WebError(403, "this seat token is not valid for this game")
        return Viewer(kind="seat", name=seat) if seat else PUBLIC

    def seat_for(request: Request, game: LiveGame) -> str:
        viewer = viewer_for(request, game, "seat")
        if viewer.seat is None:
            raise WebError(403, "this needs your seat token (join the game first)")
        return viewer.seat

    def with_cookie(payload: dict, game_id: str, token: str) -> JSONResponse:
        response = JSONResponse(payload)
        response.set_cookie(cookie_name(game_id), token, httponly=True, samesite="strict",
                            path="/", max_age=30 * 24 * 3600)
        return response

    def page(name: str) -> FileResponse:
        return FileResponse(HERE / "templates" / name, media_type="text/html")

    @app.get("/", include_in_schema=False)
    def lobby_page() -> FileResponse:
        return page("lobby.html")

    @app.get("/roles.js", include_in_schema=False)
    def roles_script() -> Response:
        """Each role's icon and colour for the pages' scripts, from the one role table."""
        look = {s.name: {"icon": s.icon, "colour": s.colour} for s in ROLES.values()}
        return Response(f"const ROLE_LOOK = {json.dumps(look)};\n",
                        media_type="text/javascript")

    @app.get("/games/{game_id}", include_in_schema=False)
    def table_page(game_id: str) -> FileResponse:
        manager.live(game_id)
        return page("table.html")

    @app.get("/games/{game_id}/god", include_in_schema=False)
    def god_page(game_id: str) -> FileResponse:
        manager.god_allowed(manager.live(game_id))
        return page("god.html")

    @app.get("/games/{game_id}/replay", include_in_schema=False)
    def replay_page(game_id: str) -> FileResponse:
        manager.live(game_id)
        return page("replay.html")

    @app.get("/api/config")
    def config() -> dict:
        return {"models": manager.models, "default_model": manager.models[0],
                "rules": rule_options(), "rules_text": RULES_TEXT,
                "playstyles": list(PLAYSTYLES), "min_players": MIN_PLAYERS,
                "scaled_discussion": scaled_discussion(),
                "max_players": MAX_PLAYERS}

    @app.get("/api/games")
    def list_games() -> list[dict]:
        return manager.lobby()

    @app.post("/api/games")
    def create_game(req: CreateGame) -> JSONResponse:
        state, token = manager.create(req)
        payload = {"id": state.game_id, "seat": req.human, "token": token,
                   "url": f"/games/{state.game_id}"}
        if token:
            return with_cookie(payload, state.game_id, token)
        return JSONResponse(payload)

    @app.post("/api/games/{game_id}/join")
    def join(game_id: str, req: JoinSeat) -> JSONResponse:
        token = manager.join(game_id, req.name)
        return with_cookie({"id": game_id, "seat": req.name, "token": token}, game_id, token)

    @app.post("/api/games/{game_id}/adopt")
    def adopt(game_id: str) -> dict:
        manager.adopt(game_id)
        return {"id": game_id, "managed": True}

    @app.get("/api/games/{game_id}/state")
    def game_state(game_id: str, request: Request, view: str | None = None) -> dict:
        game = manager.live(game_id)
        return game.snapshot(viewer_for(request, game, view))

    @app.post("/api/games/{game_id}/act")
    def act(game_id: str, req: Act, request: Request) -> dict:
        game = manager.live(game_id)
        game.human_act(seat_for(request, game), req)
        return {"ok": True}

    @app.post("/api/games/{game_id}/control")
    def control(game_id: str, req: Control) -> dict:
        game = manager.live(game_id)
        if req.action != "pause":
            manager.check_game_models(game.state)
        game.control(req.action)
        return {"ok": True, "paused": game.paused}

    @app.get("/api/games/{game_id}/god")
    def god(game_id: str) -> dict:
        return manager.god(game_id)

    @app.get("/api/games/{game_id}/calls")
    def calls(game_id: str, step: int = Query(..., ge=0, le=10**6)) -> list[dict]:
        return manager.calls(game_id, step)

    @app.get("/api/games/{game_id}/replay")
    def replay(game_id: str) -> dict:
        return manager.replay(game_id)

    @app.get("/api/games/{game_id}/events")
    async def events(game_id: str, request: Request, view: str | None = None):
        game = await run_in_threadpool(manager.live, game_id)
        viewer = await run_in_threadpool(viewer_for, request, game, view)
        sub, snap = game.subscribe(viewer, asyncio.get_running_loop())

        async def stream() -> AsyncIterator[str]:
            try:
                yield sse({"type": "snapshot", **snap})
                if snap["game"]["over"]:
                    yield sse({"type": "end"})
                    return
                while True:
                    try:
                        batch = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_S)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    for e in batch:
                        yield sse(e)
                    if stream_payload(batch):
                        return
            finally:
                game.unsubscribe(sub)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache",
                                          "X-Accel-Buffering": "no"})

    return app


def sse(event: dict) -> str:
    return f"data: {json.dumps(event, separators=(',', ':'))}\n\n"
