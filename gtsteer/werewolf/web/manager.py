"""The server's games: create, load (rebuilding each game's event history from SQLite), resume
after a restart, seat tokens, the lobby list, the god view and the replay."""

from __future__ import annotations

import logging
import secrets
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from gtsteer.llm import LLM, Backend, ModelConfigError, make_backend
from gtsteer.werewolf.engine import GAME_ID_RE, new_game
from gtsteer.werewolf.events import step_events
from gtsteer.werewolf.llmcalls import CallRecord
from gtsteer.werewolf.replay import ReplayMismatch, initial_state, replay, replay_events
from gtsteer.werewolf.roles import optional_roles
from gtsteer.werewolf.rules import WerewolfConfigError
from gtsteer.werewolf.state import GameConfig, GameState
from gtsteer.werewolf.store import GameNotFound, GameStore
from gtsteer.werewolf.themes import builtin_cast, themed_cast
from gtsteer.werewolf.visibility import GOD, Event, for_viewer, players_view
from gtsteer.werewolf.web.live import LiveGame, MeteredPool, WebError
from gtsteer.werewolf.web.schemas import CreateGame
from gtsteer.werewolf.web.webdb import WebDB

log = logging.getLogger("gtsteer.werewolf.web")

#: GameConfig fields the lobby sets itself (an optional role's switch among them: `maniac`);
#: any other Literal field is a rule switch.
SET_BY_LOBBY = {"n_players", "n_wolves", "max_days", "max_messages_per_day", "intro",
                *(s.name for s in optional_roles())}


def rule_options() -> dict[str, dict[str, Any]]:
    """The engine's rule switches (Literal fields of GameConfig), offered in the lobby."""
    out = {}
    for name, f in GameConfig.model_fields.items():
        if name not in SET_BY_LOBBY and get_origin(f.annotation) is Literal:
            out[name] = {"choices": list(get_args(f.annotation)), "default": f.default,
                         "help": f.description or ""}
    return out


def scaled_discussion() -> bool:
    """Whether the engine can scale the discussion itself (max_messages_per_day=None)."""
    return GameConfig.model_fields["max_messages_per_day"].default is None


class GameManager:
    def __init__(self, db_path: str | Path, models: list[str],
                 llm_factory: Callable[[str], LLM] | None = None):
        if not models:
            raise ValueError("the server needs at least one model")
        self.db_path = Path(db_path)
        self.models = list(dict.fromkeys(models))
        self._factory = llm_factory
        self._backends: dict[str, Backend] = {}
        self._local = threading.local()
        self.webdb = WebDB(self.store().path)
        self.games: dict[str, LiveGame] = {}
        self.lock = threading.RLock()
        #: Held from an adopt's "not managed yet?" to its "managed now", so of concurrent
        #: adopts of one game exactly one succeeds (its own lock: checking the models may
        #: load one, which must not stall every other request on `lock`).
        self.adopt_lock = threading.Lock()

    def store(self) -> GameStore:
        """One connection per thread (sqlite3 connections stay in their thread)."""
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = GameStore(self.db_path)
        return store

    def _backend(self, model: str) -> Backend:
        # Shared across games: one local llama.cpp context (and its lock) for the whole server.
        with self.lock:
            if model not in self._backends:
                self._backends[model] = make_backend(model)
            return self._backends[model]

    def pool(self) -> MeteredPool:
        if self._factory is not None:
            return MeteredPool(self._factory)
        return MeteredPool(lambda m: LLM(m, backend=self._backend(m)))

    def check_model(self, model: str) -> None:
        if model not in self.models:
            raise WebError(422, f"model {model!r} is not offered by this server "
                           f"(choose from {self.models}; start it with --llm to add models)")
        if self._factory is None:
            try:
                self._backend(model)
            except ModelConfigError as exc:
                raise WebError(422, f"model {model!r}: {exc}") from exc

    def check_game_models(self, state: GameState) -> None:
        """Driving a game made elsewhere never spends on a model the operator did not list."""
        for m in dict.fromkeys([*(p.model for p in state.players if not p.human),
                                state.router_model]):
            self.check_model(m)

    def start(self) -> None:
        """Resume every unfinished game this server drives (after a restart)."""
        for game_id in self.webdb.games():
            try:
                live = self.live(game_id)
            except WebError as exc:  # deleted or unreadable: the others still resume
                log.warning("not resuming %s: %s", game_id, exc.message)
                continue
            if live.state.over:
                continue
            try:
                self.check_game_models(live.state)
            except WebError as exc:  # its models are not offered by this server
                log.warning("not resuming %s: %s", game_id, exc.message)
                live.error = exc.message
                continue
            log.info("resuming game %s at step %s", game_id, live.state.step)
            live.start()

    def stop(self) -> None:
        with self.lock:
            games = list(self.games.values())
        for g in games:
            g.stop()
            g.close_streams()

    def live(self, game_id: str) -> LiveGame:
        if not GAME_ID_RE.match(game_id):
            raise WebError(404, f"no game {game_id!r}")
        with self.lock:
            if game_id in self.games:
                return self.games[game_id]
            try:
                state = self.store().load(game_id)
            except GameNotFound as exc:
                raise WebError(404, str(exc)) from exc
            except ValueError as exc:  # stored by an engine whose snapshots this one refuses
                raise WebError(409, f"game {game_id} cannot be read: {exc}") from exc
            meta = self.webdb.game(game_id)
            game = LiveGame(state, self._history(state), store=self.store, webdb=self.webdb,
                            pool=self.pool(), managed=meta is not None,
                            paused=bool(meta and meta.paused),
                            step_delay_s=meta.step_delay_s if meta else 0.0)
            self.games[game_id] = game
            return game

    def _history(self, state: GameState) -> list[Event]:
        decisions = self.store().steps(state.game_id)
        try:
            return [e for b, a, d in replay(state, decisions) for e in step_events(b, a, d)]
        except ReplayMismatch as exc:
            log.warning("%s", exc)
            return [{"type": "message", "audience": "all", "id": 0, "day": state.day,
                     "phase": state.phase, "channel": "public", "author": "Moderator",
                     "text": "(the earlier history of this game cannot be shown)"}]

    def adopt(self, game_id: str) -> LiveGame:
        """Let this server drive a stored game it did not create (e.g. from the CLI); of
        concurrent adopts of one game, one succeeds and the others get 409."""
        game = self.live(game_id)
        with self.adopt_lock:
            if game.managed:
                raise WebError(409, f"game {game_id} is already run by this server")
            if game.state.over:
                raise WebError(409, f"game {game_id} is over")
            self.check_game_models(game.state)
            self.webdb.add_game(game_id)
            game.managed = True
        game.start()
        return game

    def create(self, req: CreateGame) -> tuple[GameState, str | None]:
        models = req.models or [req.model or self.models[0]] * req.players
        for m in dict.fromkeys(models):
            self.check_model(m)
        self._check_rules(req.rules)
        if req.max_messages_per_day is None and not scaled_discussion():
            raise WebError(422, "max_messages_per_day: this engine needs a number of turns")
        seed = req.seed if req.seed is not None else secrets.randbelow(2**31)
        pool = self.pool()
        records: list[CallRecord] = []
        if req.cast:
            scene, _ = builtin_cast(req.players, seed)
            cast = [(c.name, c.story, c.playstyle) for c in req.cast]
        elif req.theme:
            scene, cast, rec, _ = themed_cast(req.theme, req.players, seed, pool, models[0])
            records.append(rec)
        else:
            scene, cast = builtin_cast(req.players, seed)
        if req.human:
            cast = [(req.human, "A human player.", cast[0][2]), *cast[1:]]
        config = req.to_config()
        try:
            state = new_game(cast, config, seed=seed, models=models,
                             humans=[req.human] if req.human else [],
                             game_id=uuid.uuid4().hex[:10], scene=scene)
        except WerewolfConfigError as exc:
            raise WebError(422, str(exc)) from exc
        self.store().create(state, records)
        self.webdb.add_game(state.game_id, step_delay_s=req.step_delay_s)
        self.webdb.add_cost(state.game_id, pool.cost_usd())
        token = self.webdb.claim_seat(state.game_id, req.human) if req.human else None
        self.live(state.game_id).start()
        return state, token

    @staticmethod
    def _check_rules(chosen: dict[str, str]) -> None:
        options = rule_options()
        for key, value in chosen.items():
            if key not in options:
                raise WebError(422, f"unknown rule {key!r} (this engine has: "
                               f"{sorted(options) or 'none'})")
            if value not in options[key]["choices"]:
                raise WebError(422, f"rule {key}={value!r} is not one of "
                               f"{options[key]['choices']}")

    def join(self, game_id: str, name: str) -> str:
        game = self.live(game_id)
        humans = [p.name for p in game.state.players if p.human]
        if name not in humans:
            raise WebError(404, f"game {game_id} has no human seat named {name!r}")
        token = self.webdb.claim_seat(game_id, name)
        if token is None:
            raise WebError(409, f"the seat {name} is already taken")
        return token

    def seat_of(self, game_id: str, token: str | None) -> str | None:
        return self.webdb.seat_of(game_id, token)

    def lobby(self) -> list[Event]:
        conn = self.webdb.conn
        with self.webdb.lock:
            usage = {r[0]: r[1:] for r in conn.execute(
                "SELECT game_id, COUNT(*), COALESCE(SUM(prompt_tokens), 0) "
                "+ COALESCE(SUM(completion_tokens), 0) FROM llm_calls GROUP BY game_id")}
        web = self.webdb.games()
        out = []
        for game_id, _status, _winner, _step in reversed(self.store().games()):
            with self.lock:
                live = self.games.get(game_id)
            try:
                state = live.state if live else self.store().load(game_id)
            except ValueError as exc:  # a snapshot this engine cannot read: list, don't fail
                log.warning("game %s: %s", game_id, exc)
                continue
            calls, tokens = usage.get(game_id, (0, 0))
            meta = web.get(game_id)
            cost = round(meta.cost_usd, 6) if meta else None
            human = next((p.name for p in state.players if p.human), None)
            if human and not state.over:
                # They grow with every committed step, which would count the night's hidden
                # steps for the seats (and show the stall at a human's night slot).
                calls = tokens = cost = None
            out.append({
                "id": game_id, "players": len(state.players), "day": state.day,
                "phase": state.phase, "winner": state.winner, "over": state.over,
                "human": human, "llm_calls": calls, "tokens": tokens, "cost_usd": cost,
                "managed": meta is not None, "paused": bool(live and live.paused),
                "models": sorted({p.model for p in state.players if not p.human}),
            })
        return out

    def god_allowed(self, game: LiveGame) -> None:
        if game.human_game and not game.state.over:
            raise WebError(403, "the god view of a game with a human seat opens when it ends")

    def god(self, game_id: str) -> Event:
        game = self.live(game_id)
        self.god_allowed(game)
        with game.cond:
            state = game.state
            feed = for_viewer(game.log, GOD)
        calls: dict[int, int] = {}
        for r in self.store().calls(game_id):
            step = int(r.extra.get("step", 0))
            calls[step] = calls.get(step, 0) + 1
        decisions = [e for e in feed if e["type"] == "decision"]
        for d in decisions:
            d["llm_calls"] = calls.get(d["step"], 0)
        return {"game": game.info(GOD), "players": players_view(state, GOD), "feed": feed,
                "decisions": decisions, "setup_calls": calls.get(0, 0)}

    def calls(self, game_id: str, step: int) -> list[Event]:
        game = self.live(game_id)
        self.god_allowed(game)
        return [r.model_dump(exclude={"extra"}) | {"step": step}
                for r in self.store().calls(game_id) if int(r.extra.get("step", -1)) == step]

    def replay(self, game_id: str) -> Event:
        game = self.live(game_id)
        if not game.state.over:
            raise WebError(409, "only a finished game can be replayed; watch it live instead")
        latest = game.state
        decisions = self.store().steps(game_id)
        try:
            steps = [{"step": a.step, "day": a.day, "phase": a.phase, "events": events}
                     for a, events in replay_events(latest, decisions, GOD)]
        except ReplayMismatch as exc:
            raise WebError(409, str(exc)) from exc
        start = initial_state(latest)
        return {"game": game.info(GOD), "players": players_view(start, GOD), "steps": steps}
