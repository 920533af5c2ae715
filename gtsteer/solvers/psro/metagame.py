"""The PSRO meta-game: payoffs of "one instruction per player for all of its messages".

Each instance's game is expanded only along the histories such profiles reach (every player
repeats one instruction from its population), then each profile's value is computed exactly:
the expectation over the LLM-sample chance nodes of the cached tree. Per-instance tensors are
averaged over instances with a per-entry 95% Student-t interval. One tensor per player: the
game is general-sum and need not be symmetric, so nothing is symmetrised.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gtsteer.binding import (
    DialogueGame,
    DialogueState,
    ExpansionError,
    ExpansionReport,
    expand_sync,
)
from gtsteer.llm import StorageError
from gtsteer.llm.session import BudgetExceeded
from gtsteer.solvers.evaluate import expected_returns, fixed
from gtsteer.solvers.metrics import t_interval


def action_ids(game: DialogueGame, populations: Sequence[Sequence[str]]) -> list[list[int]]:
    """Instruction labels -> the game's action ids, per player (KeyError names a missing one)."""
    out = []
    for p, labels in enumerate(populations):
        names = game.instructions(p)
        missing = [label for label in labels if label not in names]
        if missing:
            raise KeyError(f"player {p}: instructions {missing} are not actions of the game")
        out.append([names.index(label) for label in labels])
    return out


def one_instruction_each(
    game: DialogueGame, allowed: Sequence[Sequence[int]]
) -> Callable[[DialogueState], list[int]]:
    """Expansion filter: a player's first message may use any allowed instruction, its later
    ones only the instruction it already chose (the meta-game's strategies)."""

    def follow(state: DialogueState) -> list[int]:
        player = state.current_player()
        names = game.instructions(player)
        chosen = [t.instruction for t in state.turns if t.speaker == player and t.instruction]
        return [names.index(chosen[0])] if chosen else list(allowed[player])

    return follow


def profile_values(game: DialogueGame, allowed: Sequence[Sequence[int]]) -> np.ndarray:
    """Stack (N, n_0, ..., n_{N-1}): every player's exact expected return for each profile."""
    n = game.num_players()
    shape = tuple(len(a) for a in allowed)
    out = np.zeros((n, *shape))
    for index in itertools.product(*(range(s) for s in shape)):
        profile = [allowed[p][i] for p, i in enumerate(index)]
        every_player: tuple[slice | int, ...] = (slice(None), *index)
        out[every_player] = expected_returns(game, [fixed(profile)] * n)
    return out


@dataclass
class MetaGame:
    """Per-player payoff tensors over the populations, averaged over instances."""

    labels: list[list[str]]
    #: (G, N, n_0, ..., n_{N-1}): one stack per instance used.
    per_instance: np.ndarray
    instances: list[int]
    failures: dict[int, str] = field(default_factory=dict)

    @property
    def mean(self) -> np.ndarray:
        return self.per_instance.mean(axis=0)

    def interval(self, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-entry two-sided Student-t interval across instances (None for one instance)."""
        return t_interval(self.per_instance, axis=0, confidence=confidence)


@dataclass
class Expansion:
    """LLM work of one meta-game build, summed over instances."""

    llm_requests: int = 0
    cache_hits: int = 0
    new_calls: int = 0
    reports: dict[int, ExpansionReport] = field(default_factory=dict)

    def add(self, index: int, report: ExpansionReport) -> None:
        self.reports[index] = report
        self.llm_requests += report.llm_requests
        self.cache_hits += report.cache_hits
        self.new_calls += report.new_calls


@dataclass
class InstanceEntries:
    """One instance's part of a meta-game build: its expansion report (None when expanding
    raised), its payoff stack over the profiles, or why it has none."""

    index: int
    report: ExpansionReport | None
    stack: np.ndarray | None
    failure: str | None = None


def instance_entries(game: DialogueGame, populations: Sequence[Sequence[str]],
                     progress: bool = False) -> InstanceEntries:
    """Expand what the populations' profiles need in one game and evaluate them exactly.
    Any exception (an LLM error, a domain utility's bug) fails this instance only, with its
    reason, as in `gtsteer solve`; unusable storage and a reached budget stop the build."""
    index = game.instance.index
    allowed = action_ids(game, populations)
    try:
        report = expand_sync(game, progress=progress, follow=one_instruction_each(game, allowed))
    except (StorageError, BudgetExceeded):  # the run's limit or storage, no game's fault
        raise
    except Exception as exc:  # noqa: BLE001 - isolation is the point; the reason is kept
        return InstanceEntries(index, None, None, f"{type(exc).__name__}: {exc}")
    if report.failed:
        return InstanceEntries(index, report, None, str(report.reason or "expansion failed"))
    return InstanceEntries(index, report, profile_values(game, allowed))


#: How a build applies its per-game work to the games: `[work(g) for g in games]` unless a
#: driver hands another (a Ray run ships each game to a worker). Whatever it does, it must
#: return the results in order and leave each game's filled tree as the plain loop would.
GameMap = Callable[[Callable[[DialogueGame], Any], Sequence[DialogueGame]], list[Any]]


def serial_map(work: Callable[[DialogueGame], Any], games: Sequence[DialogueGame]) -> list[Any]:
    return [work(game) for game in games]


def build_metagame(
    games: Sequence[DialogueGame],
    populations: Sequence[Sequence[str]],
    *,
    progress: bool = False,
    skip: Sequence[int] = (),
    map_games: GameMap = serial_map,
) -> tuple[MetaGame, Expansion]:
    """Expand what the populations' profiles need in every game and evaluate them exactly.

    An instance whose expansion fails (its LLM could not answer) is left out of the average
    and named in `failures`; `skip` leaves out instances known to have failed before. Each
    instance is one unit of `map_games` (`instance_entries`)."""
    todo = [game for game in games if game.instance.index not in skip]
    work = partial(instance_entries, populations=[list(p) for p in populations],
                   progress=progress)
    expansion = Expansion()
    stacks, used, failures = [], [], {}
    for entries in map_games(work, todo):
        if entries.report is not None:
            expansion.add(entries.index, entries.report)
        if entries.stack is None:
            failures[entries.index] = entries.failure or "expansion failed"
            continue
        stacks.append(entries.stack)
        used.append(entries.index)
    if not stacks:
        raise ExpansionError.every_instance(failures)
    labels = [list(p) for p in populations]
    return MetaGame(labels, np.stack(stacks), used, failures), expansion


def sample_dialogues(
    game: DialogueGame, populations: Sequence[Sequence[str]], player: int,
    opponents: Sequence[str], payoff_digits: int = 3,
) -> list[tuple[str, float, str]]:
    """One dialogue per instruction of `player` against fixed `opponents` instructions
    (first LLM sample at every chance node): (instruction, player's payoff, transcript).
    Reads only nodes the meta-game expansion already filled."""
    names = game.instance.names
    out = []
    for label in populations[player]:
        profile = [label if p == player else opponents[p] for p in range(game.num_players())]
        ids = action_ids(game, [[x] for x in profile])
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(state.chance_outcomes()[0][0])
            else:
                state.apply_action(ids[state.current_player()][0])
        transcript = "\n".join(f"{names[t.speaker]}: {t.text}" for t in state.turns)
        out.append((label, round(float(state.returns()[player]), payoff_digits), transcript))
    return out
