"""The game loop: ask for the pending decision, get it (bot, router or human), step, commit.

The loop holds no state of its own: everything is in the `GameState` and the store, so
`resume` is just `run(store.load(game_id))`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from gtsteer.llm.cache import public_url
from gtsteer.werewolf.bots import bot_decision
from gtsteer.werewolf.engine import check_game_id, new_game, pending, step
from gtsteer.werewolf.llmcalls import CallRecord, LLMPool
from gtsteer.werewolf.playstyles import AssignedPlaystyle, PlaystyleChooser
from gtsteer.werewolf.router import route
from gtsteer.werewolf.rules import check_players
from gtsteer.werewolf.state import Decision, GameConfig, GameState, Pending
from gtsteer.werewolf.store import GameStore
from gtsteer.werewolf.themes import builtin_cast, themed_cast

HumanAgent = Callable[[GameState, Pending], Decision]
StepHook = Callable[[GameState, GameState, Decision], None]


def create_game(
    store: GameStore,
    config: GameConfig | None = None,
    *,
    seed: int = 0,
    model: str = "fake",
    models: list[str] | None = None,
    theme: str | None = None,
    human: str | None = None,
    game_id: str | None = None,
    pool: LLMPool | None = None,
    cast: list[tuple[str, str, str]] | None = None,
    api_base: str | None = None,
) -> GameState:
    """Cast (given, themed or built-in), deal and store a new game (its `api_base` without
    credentials)."""
    config = GameConfig() if config is None else config
    n_players = config.n_players
    check_players(n_players)  # before a cast of that size is drawn or asked for
    game_id = game_id or uuid.uuid4().hex[:10]
    check_game_id(game_id)
    pool = pool or LLMPool()
    records: list[CallRecord] = []
    if cast is not None:
        scene = ""
    elif theme:
        scene, cast, rec, _fell_back = themed_cast(theme, n_players, seed, pool, model)
        records.append(rec)
    else:
        scene, cast = builtin_cast(n_players, seed)
    if human:
        # The human takes the first seat under their own name.
        style = cast[0][2]
        cast = [(human, "A human player.", style), *cast[1:]]
    state = new_game(cast, config, seed=seed, models=models or model,
                     humans=[human] if human else [], game_id=game_id, scene=scene)
    state.api_base = public_url(api_base)
    store.create(state, records)
    return state


class GameRunner:
    def __init__(
        self,
        store: GameStore,
        pool: LLMPool | None = None,
        chooser: PlaystyleChooser | None = None,
        human: HumanAgent | None = None,
        on_step: StepHook | None = None,
    ):
        self.store = store
        self.pool = pool or LLMPool()
        self.chooser = chooser or AssignedPlaystyle()
        self.human = human
        self.on_step = on_step

    def decide(self, state: GameState, want: Pending) -> tuple[Decision, list[CallRecord]]:
        if want.kind == "route":
            return route(state, want, self.pool)
        actor = state.player(want.actor or "")
        if actor.human:
            if self.human is None:
                raise RuntimeError(f"{actor.name} is a human player but no terminal is attached")
            return self.human(state, want), []
        return bot_decision(state, want, self.pool, self.chooser)

    def run(self, state: GameState, max_steps: int | None = None) -> GameState:
        taken = 0
        while not state.over and (max_steps is None or taken < max_steps):
            want = pending(state)
            assert want is not None
            decision, records = self.decide(state, want)
            after = step(state, decision)
            self.store.commit_step(state, after, decision, records)
            if self.on_step is not None:
                self.on_step(state, after, decision)
            state = after
            taken += 1
        return state
