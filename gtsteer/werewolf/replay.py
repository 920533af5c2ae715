"""Rebuild a stored game step by step: the stored decisions replayed from its re-dealt initial
state (the engine is pure), which must end exactly on the stored state, or it is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from gtsteer.werewolf.engine import new_game, step
from gtsteer.werewolf.events import step_events
from gtsteer.werewolf.state import Decision, GameState
from gtsteer.werewolf.visibility import Event, Viewer, for_viewer


class ReplayMismatch(RuntimeError):
    """The stored decisions do not lead to the stored state (a different engine version)."""


def initial_state(latest: GameState) -> GameState:
    state = new_game(
        [(p.name, p.story, p.playstyle) for p in latest.players], latest.config,
        seed=latest.seed, models=[p.model for p in latest.players],
        humans=[p.name for p in latest.players if p.human],
        game_id=latest.game_id, scene=latest.scene,
    )
    state.router_model = latest.router_model
    for p, stored in zip(state.players, latest.players, strict=True):
        p.role = stored.role
    return state


def replay(latest: GameState, decisions: list[Decision]) -> Iterator[tuple[GameState, GameState,
                                                                          Decision]]:
    """(before, after, decision) for every stored step; checks the end state."""
    state = initial_state(latest)
    for decision in decisions:
        d = decision.model_copy(update={"info_state": None})
        after = step(state, d)
        yield state, after, decision
        state = after
    if _comparable(state) != _comparable(latest):
        raise ReplayMismatch(
            f"replaying {len(decisions)} stored decisions of game {latest.game_id} does not "
            "reproduce its stored state (was it played by another engine version?)"
        )


def replay_events(latest: GameState, decisions: list[Decision], viewer: Viewer
                  ) -> Iterator[tuple[GameState, list[Event]]]:
    """Every stored step: the state after it and its events as `viewer` may see them."""
    for before, after, decision in replay(latest, decisions):
        yield after, for_viewer(step_events(before, after, decision), viewer)


def _comparable(state: GameState) -> str:
    return state.model_dump_json()
