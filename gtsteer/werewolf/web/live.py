"""One running game on the server: a worker thread that steps the bots, the human's moves, and
the event streams of everyone watching. A bot decides outside the lock; a step is applied,
committed and published under it, and a human's move is validated against the current pending
decision first, so a bad request never changes the game.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gtsteer.llm import LLM
from gtsteer.werewolf.bots import MAX_LINE_CHARS
from gtsteer.werewolf.engine import IllegalDecision, pending, step
from gtsteer.werewolf.events import step_events
from gtsteer.werewolf.llmcalls import LLMPool
from gtsteer.werewolf.runner import GameRunner
from gtsteer.werewolf.state import Decision, GameState
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.visibility import (
    Event,
    Viewer,
    available_actions,
    for_viewer,
    me_view,
    players_view,
    turn_view,
)
from gtsteer.werewolf.web.schemas import Act
from gtsteer.werewolf.web.webdb import WebDB

log = logging.getLogger("gtsteer.werewolf.web")


class WebError(Exception):
    """A refused request: becomes an HTTP error with this status and message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class MeteredPool(LLMPool):
    """A game's own LLM wrappers (so the game's cost is metered apart from other games')."""

    def __init__(self, factory: Callable[[str], LLM]):
        super().__init__(factory)
        self.made: list[LLM] = []

    def get(self, model: str) -> LLM:
        llm = super().get(model)
        if llm not in self.made:
            self.made.append(llm)
        return llm

    def cost_usd(self) -> float:
        return sum(llm.usage.cost_usd for llm in self.made)


@dataclass
class Subscriber:
    viewer: Viewer
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    #: The last turn event sent: an unchanged one is not sent again (see `_publish`).
    last_turn: Event | None = None


class LiveGame:
    def __init__(self, state: GameState, history: list[Event], *, store: Callable[[], GameStore],
                 webdb: WebDB, pool: MeteredPool, managed: bool, paused: bool = False,
                 step_delay_s: float = 0.0):
        self.state = state
        self.log = history
        self.store = store
        self.webdb = webdb
        self.pool = pool
        self.managed = managed
        self.paused = paused
        self.step_delay_s = step_delay_s
        self.steps_allowed = 0
        self.error: str | None = None
        self.cond = threading.Condition()
        self.subscribers: list[Subscriber] = []
        self.thread: threading.Thread | None = None
        self.stopping = False
        self.thinking = False

    @property
    def game_id(self) -> str:
        return self.state.game_id

    @property
    def human_game(self) -> bool:
        return any(p.human for p in self.state.players)

    def info(self, viewer: Viewer) -> Event:
        s = self.state
        turn = turn_view(s, viewer, pending(s))
        # Only from the viewer's own turn view: at night, "a human is acting" would tell a
        # spectator that the human holds a night role.
        human_turn = bool(turn and turn.get("human"))
        return {
            "id": s.game_id, "scene": s.scene, "day": s.day, "phase": s.phase,
            "winner": s.winner, "end_reason": s.end_reason, "over": s.over,
            "config": s.config.model_dump(), "human_game": self.human_game,
            "managed": self.managed, "paused": self.paused, "halted": self.error,
            "waiting_for_human": human_turn, "max_line_chars": MAX_LINE_CHARS,
        }

    def turn_event(self, viewer: Viewer) -> Event:
        turn = turn_view(self.state, viewer, pending(self.state))
        thinking = self.thinking and not self.state.over
        if turn is not None and turn["kind"] == "night" and turn["actor"] is None:
            # A night turn this viewer may not see: "someone acts" whether a bot is thinking or
            # a human deciding, so the flag cannot mark the human's slot or count the steps.
            thinking = not self.state.over
        return {"type": "turn", "turn": turn, "day": self.state.day, "phase": self.state.phase,
                "paused": self.paused, "thinking": thinking, "halted": self.error}

    def snapshot(self, viewer: Viewer) -> Event:
        with self.cond:
            return self._snapshot(viewer)

    def _snapshot(self, viewer: Viewer) -> Event:
        return {"game": self.info(viewer), "players": players_view(self.state, viewer),
                "me": me_view(self.state, viewer), "feed": for_viewer(self.log, viewer),
                "turn": self.turn_event(viewer)}

    def subscribe(self, viewer: Viewer, loop: asyncio.AbstractEventLoop) -> tuple[Subscriber,
                                                                                  Event]:
        """Register a stream and return its starting snapshot, atomically (no event lost)."""
        with self.cond:
            sub = Subscriber(viewer=viewer, loop=loop)
            self.subscribers.append(sub)
            snap = self._snapshot(viewer)
            sub.last_turn = snap["turn"]
            return sub, snap

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.cond:
            if sub in self.subscribers:
                self.subscribers.remove(sub)

    def _publish(self, events: list[Event]) -> None:
        """Send each subscriber what it may see (called with the lock held)."""
        for sub in list(self.subscribers):
            batch = for_viewer(events, sub.viewer)
            turn = self.turn_event(sub.viewer)
            # Nothing this viewer may see changed: send nothing, or the number of (empty)
            # batches would count the steps it cannot see, e.g. the night's hidden actions.
            if not batch and turn == sub.last_turn and not self.state.over:
                continue
            sub.last_turn = turn
            batch.append(turn)
            if self.state.over:
                batch.append({"type": "end"})
            try:
                sub.loop.call_soon_threadsafe(sub.queue.put_nowait, batch)
            except RuntimeError:  # the client's event loop is gone
                self.subscribers.remove(sub)

    def _apply(self, before: GameState, decision: Decision, records: list) -> None:
        """Step, commit and publish (lock held; `before` must be the current state)."""
        after = step(before, decision)
        self.store().commit_step(before, after, decision, records)
        self.state = after
        events = step_events(before, after, decision)
        self.log.extend(events)
        self._publish(events)
        self.cond.notify_all()

    def human_act(self, seat: str, act: Act) -> None:
        with self.cond:
            s = self.state
            want = pending(s)
            if want is None:
                raise WebError(409, "the game is over")
            if want.actor != seat:
                raise WebError(409, "it is not your turn")
            if act.kind != want.kind:
                raise WebError(409, f"your turn asks for a {want.kind}, not a {act.kind}")
            extra: dict = {}
            legal = want.legal_targets
            if act.kind == "night":
                actions = available_actions(want)
                action = act.action or want.verb
                if action not in actions:
                    raise WebError(422, f"action {action!r} is not one of {sorted(actions)}")
                legal = actions[action]
                if action != want.verb:
                    extra["action"] = action
            if act.kind in ("vote", "night") and act.target not in legal:
                raise WebError(422, f"target {act.target!r} is not one of {legal}")
            decision = Decision(kind=want.kind, actor=seat, text=act.text, target=act.target,
                                reason="(human)" if act.target else "", **extra)
            try:
                self._apply(s, decision, [])
            except IllegalDecision as exc:  # the checks above should make this unreachable
                raise WebError(422, str(exc)) from exc

    def control(self, action: str) -> None:
        with self.cond:
            if self.human_game and not (action == "resume" and self.error):
                raise WebError(409, "pause, step and resume are for bot-only games")
            if self.state.over:
                raise WebError(409, "the game is over")
            if action == "step" and not self.paused:
                raise WebError(409, "pause the game before stepping it")
            if action == "pause":
                self.paused = True
            elif action == "resume":
                self.paused, self.steps_allowed, self.error = False, 0, None
            else:
                self.steps_allowed += 1
            self.webdb.set_paused(self.game_id, self.paused)
            self._publish([])
            self.cond.notify_all()
        self.start()

    def _bot_turn(self) -> bool:
        want = pending(self.state)
        return want is not None and not (want.actor and self.state.player(want.actor).human)

    def _may_step(self) -> bool:
        return (not self.stopping and self._bot_turn() and self.error is None
                and (not self.paused or self.steps_allowed > 0))

    def run(self) -> None:
        """The worker: step bots until the game ends, waiting for humans and on pause."""
        runner = GameRunner(self.store(), pool=self.pool)
        while True:
            with self.cond:
                while not self._may_step():
                    if self.stopping or self.state.over:
                        return
                    self.cond.wait()
                if self.paused:
                    self.steps_allowed -= 1
                before = self.state
                self.thinking = True
                self._publish([])
            want = pending(before)
            cost0 = self.pool.cost_usd()
            try:
                decision, records = runner.decide(before, want)  # type: ignore[arg-type]
            except Exception as exc:
                log.exception("game %s: bot decision failed", self.game_id)
                with self.cond:
                    self.thinking = False
                    self.error = f"a bot decision failed ({type(exc).__name__}); see the log"
                    self._publish([])
                return
            self.webdb.add_cost(self.game_id, self.pool.cost_usd() - cost0)
            with self.cond:
                self.thinking = False
                if self.state is before:
                    try:
                        self._apply(before, decision, records)
                    except Exception as exc:  # stop this game, keep the server
                        log.exception("game %s: step %s failed", self.game_id, before.step + 1)
                        self.error = f"a step failed ({type(exc).__name__}); see the log"
                        self._publish([])
                        return
                if self.step_delay_s and not self.state.over:
                    self.cond.wait(self.step_delay_s)

    def start(self) -> None:
        with self.cond:
            if self.state.over or not self.managed:
                return
            if self.thread is not None and self.thread.is_alive():
                return
            self.stopping = False
            self.thread = threading.Thread(target=self.run, name=f"werewolf-{self.game_id}",
                                           daemon=True)
            self.thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self.thread is not None:
            self.thread.join(timeout)

    def close_streams(self) -> None:
        with self.cond:
            for sub in list(self.subscribers):
                try:
                    sub.loop.call_soon_threadsafe(sub.queue.put_nowait, [{"type": "end"}])
                except RuntimeError:
                    pass


def stream_payload(batch: list[Any]) -> bool:
    """True when the batch ends the stream."""
    return any(e.get("type") == "end" for e in batch)
