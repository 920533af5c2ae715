"""One bot-only Werewolf game as a unit of work, for the drivers of `werewolf evaluate` and
`werewolf steer-train` (`gtsteer.runs`), serially or as a Ray task (`--ray`).

A unit plays its game into memory and returns it whole (`PlayedGame`); the driver writes it into
its SQLite store in the units' order (`gtsteer.runs.executor.InOrder`), so the database reads as
a serial run's. A game is a pure function of its `GameSetup` and chooser, so a worker plays the
serial run's game.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from gtsteer.imitation.policy import TextEmbedder
from gtsteer.llm import LLM
from gtsteer.werewolf.llmcalls import CallRecord, LLMPool, RecordingBackend
from gtsteer.werewolf.playstyles import PlaystyleChooser
from gtsteer.werewolf.rules import MAX_PLAYERS, MIN_PLAYERS
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.state import Decision, GameConfig, GameState
from gtsteer.werewolf.store import GameStore


class BotGamesConfig(BaseModel):
    """A driver's bot-only games (each driver gives `games` and `max_days` its defaults)."""

    games: int = Field(ge=1)
    llm: str = "local"
    players: int = Field(7, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    max_messages: int = Field(4, ge=1)
    max_days: int | None = Field(ge=1)
    seed: int = 0

    def setup(self, game_id: str, g: int, completion_style: bool | None) -> GameSetup:
        """The run's `g`-th game (seed `seed + g`)."""
        return GameSetup(game_id, self.seed + g, self.players, self.llm, self.max_days,
                         self.max_messages, completion_style)


@dataclass(frozen=True)
class GameSetup:
    """Everything a bot-only game is dealt and played from (it travels to a Ray worker)."""

    game_id: str
    seed: int
    players: int
    model: str
    max_days: int | None
    max_messages: int
    #: `LLMPool(completion_style=...)` of the driver's pool (None: the backend decides).
    completion_style: bool | None = None


class PlayedGame(BaseModel):
    """A finished game as the store would have received it: the dealt state with its calls,
    then each step's (after, decision, calls). Also the saved form of `evaluate`'s seeds."""

    created: GameState
    create_records: list[CallRecord]
    steps: list[tuple[GameState, Decision, list[CallRecord]]] = Field(default_factory=list)

    @property
    def final(self) -> GameState:
        return self.steps[-1][0] if self.steps else self.created

    def write_to(self, store: GameStore) -> None:
        """Commit the game step by step, exactly as playing it into `store` would have."""
        store.create(self.created, self.create_records)
        before = self.created
        for after, decision, records in self.steps:
            store.commit_step(before, after, decision, records)
            before = after


class GameLog:
    """The `GameStore` calls a game makes (`create`, `commit_step`), kept in memory."""

    def __init__(self) -> None:
        self.game: PlayedGame | None = None

    def create(self, state: GameState, records: Sequence[CallRecord] = ()) -> None:
        self.game = PlayedGame(created=state, create_records=list(records))

    def commit_step(self, before: GameState, after: GameState, decision: Decision,
                    records: Sequence[CallRecord]) -> None:
        assert self.game is not None and before.step == self.game.final.step
        self.game.steps.append((after, decision, list(records)))


def game_pool(model: LLM, completion_style: bool | None) -> LLMPool:
    """A unit's pool: `model` (the driver's, or a worker's) for the games' one model string."""

    def factory(name: str) -> LLM:
        if name.strip() != model.model:
            raise ValueError(f"this run's games use the model {model.model!r}, not {name!r}")
        return model

    return LLMPool(factory=factory, completion_style=completion_style)


def play_game(setup: GameSetup, model: LLM, chooser: PlaystyleChooser | None = None
              ) -> PlayedGame:
    log = GameLog()
    pool = game_pool(model, setup.completion_style)
    config = GameConfig(n_players=setup.players, max_days=setup.max_days,
                        max_messages_per_day=setup.max_messages)
    state = create_game(log, config, seed=setup.seed,  # type: ignore[arg-type]
                        model=setup.model, game_id=setup.game_id,
                        pool=pool)
    GameRunner(log, pool, chooser).run(state)  # type: ignore[arg-type]
    assert log.game is not None
    return log.game


def driver_model(pool: LLMPool, name: str) -> LLM:
    """The pool's `LLM` (cache and meter shared) without its `RecordingBackend` wrapper, so a
    Ray run builds the workers' backend from the model string instead of shipping the wrapper
    (each game wraps it again in its own pool)."""
    llm = pool.get(name)
    backend = llm.backend
    if not isinstance(backend, RecordingBackend):
        return llm
    bare = LLM(llm.model, backend=backend.inner, cache=llm.cache, use_cache=llm.cache is not None,
               max_concurrency=llm.max_concurrency, timeout_s=llm.timeout_s,
               max_retries=llm.max_retries, backoff_initial_s=llm.backoff_initial_s,
               backoff_max_s=llm.backoff_max_s, structured_attempts=llm.structured_attempts)
    bare.meter = llm.meter  # serially, `run_units` counts the calls on the pool's meter
    return bare


@dataclass(frozen=True)
class Steering:
    """How a unit gets the steered chooser: the chooser itself, or the policy folder's files,
    loaded once per worker process (with the policy's own embedder, or `embedder`)."""

    chooser: PlaystyleChooser | None = None
    files: tuple[tuple[str, bytes], ...] = ()
    embedder: TextEmbedder | None = None

    @classmethod
    def from_folder(cls, folder: str | Path, embedder: TextEmbedder | None = None) -> Steering:
        from gtsteer.werewolf.steering import POLICY_DIR

        path = Path(folder)
        if (path / POLICY_DIR).is_dir():
            path = path / POLICY_DIR
        files = tuple((p.name, p.read_bytes()) for p in sorted(path.iterdir()) if p.is_file())
        return cls(files=files, embedder=embedder)

    def get(self) -> PlaystyleChooser:
        if self.chooser is not None:
            return self.chooser
        digest = hashlib.sha256(b"".join(n.encode() + b"\0" + b for n, b in self.files))
        key = (digest.hexdigest(), id(self.embedder))
        if key not in _loaded:
            from gtsteer.werewolf.steering import DistilledPlaystyleChooser

            with tempfile.TemporaryDirectory(prefix="gtsteer-policy-") as tmp:
                for name, data in self.files:
                    (Path(tmp) / name).write_bytes(data)
                _loaded[key] = DistilledPlaystyleChooser.load(tmp, self.embedder)
        return _loaded[key]


#: Policies this process has loaded from travelling files (a worker loads each once).
_loaded: dict[tuple[str, int], PlaystyleChooser] = {}
