"""PSRO's per-instance meta-game work as Ray tasks (`gtsteer psro --ray`; docs/SCALE.md).

The unit: one instance's part of one meta-game build (the iteration's meta-game, or an
oracle's candidates scored against the meta-strategy): expand the profiles' branches, evaluate
them exactly (`gtsteer.solvers.psro.instance_entries`). The algorithm only sees a `GameMap`;
this module makes the one that ships games to workers.

A `DialogueGame` holds a model and its filled tree in memory, so a game does not travel as is:
the task gets what rebuilds it (spec with every adopted instruction, instance, seeds) plus the
tree filled so far, rebuilds it around the worker's model, and sends back the entries it added.
The driver merges them into its game, which then holds exactly what a serial build leaves
behind: later builds skip the same nodes, count the same requests, and the trajectory oracle's
dialogues read the same tree. Answers travel through the response cache as for every Ray run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gtsteer.binding import DialogueGame, Instance, make_game
from gtsteer.binding.reward import Reward
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM
from gtsteer.runs.executor import Executor
from gtsteer.solvers.psro import GameMap, serial_map

History = tuple[int, ...]


@dataclass
class FilledTree:
    """What a game learnt from its model, by history (the tables `grow_game` carries over)."""

    messages: dict[History, str] = field(default_factory=dict)
    terminations: dict[History, bool] = field(default_factory=dict)
    verdicts: dict[History, str] = field(default_factory=dict)
    rewards: dict[History, Reward] = field(default_factory=dict)
    echoes: set[History] = field(default_factory=set)
    failure: str | None = None

    @classmethod
    def of(cls, game: DialogueGame) -> FilledTree:
        return cls(dict(game.messages), dict(game.terminations), dict(game.verdicts),
                   dict(game.rewards), set(game.echoes), game.failure)

    def since(self, before: FilledTree) -> FilledTree:
        """The entries added after `before` (and the game's failure now)."""
        return FilledTree(
            {h: v for h, v in self.messages.items() if h not in before.messages},
            {h: v for h, v in self.terminations.items() if h not in before.terminations},
            {h: v for h, v in self.verdicts.items() if h not in before.verdicts},
            {h: v for h, v in self.rewards.items() if h not in before.rewards},
            self.echoes - before.echoes,
            self.failure,
        )

    def fill(self, game: DialogueGame) -> None:
        game.messages.update(self.messages)
        game.terminations.update(self.terminations)
        game.verdicts.update(self.verdicts)
        game.rewards.update(self.rewards)
        game.echoes.update(self.echoes)
        game.failure = self.failure


@dataclass(frozen=True)
class GameUnit:
    """One game's work as a task receives it: how to rebuild the game, and `work` itself."""

    spec: DomainSpec
    instance: Instance
    config: str
    seed: int
    sample_offset: int
    tree: FilledTree
    work: Callable[[DialogueGame], Any]

    @classmethod
    def of(cls, game: DialogueGame, work: Callable[[DialogueGame], Any]) -> GameUnit:
        params = game.get_parameters()
        return cls(game.spec, game.instance, str(params.get("config", "")),
                   int(params.get("seed", 0)), game.sample_offset, FilledTree.of(game), work)


def play_game_unit(unit: GameUnit, model: LLM) -> tuple[Any, FilledTree]:
    """Rebuild the game around `model`, run the work, return its value and the new entries."""
    game = make_game(unit.spec, unit.instance, model, config=unit.config, seed=unit.seed,
                     sample_offset=unit.sample_offset)
    unit.tree.fill(game)
    value = unit.work(game)
    return value, FilledTree.of(game).since(unit.tree)


def game_map(executor: Executor, model: LLM) -> GameMap:
    """The `GameMap` of a run: the plain loop serially (the games are here already), else each
    game's work as a Ray task with a worker-built `model`, its new entries merged back."""
    if executor.ray is None:
        return serial_map

    def map_games(work: Callable[[DialogueGame], Any],
                  games: Sequence[DialogueGame]) -> list[Any]:
        if any(game.llm is not model for game in games):
            raise ValueError("game_map: every game must be played by the run's model")
        run = executor.run(play_game_unit, [GameUnit.of(g, work) for g in games], model,
                           label="instances")
        values = []
        for game, (value, added) in zip(games, run.values, strict=True):
            added.fill(game)
            values.append(value)
        return values

    return map_games
