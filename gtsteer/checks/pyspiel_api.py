"""The pyspiel API check: what every solver and metric relies on, for any pyspiel game."""

from __future__ import annotations

import math
from collections.abc import Callable

import pyspiel
from pydantic import BaseModel

from gtsteer.checks.errors import fail
from gtsteer.solvers.cfr import solve_cfr
from gtsteer.solvers.metrics import nash_conv


class ApiReport(BaseModel):
    histories: int
    info_states: int
    nash_conv: float
    cfr_backend: str


def walk(state: pyspiel.State, visit: Callable[[pyspiel.State], None]) -> None:
    """Depth-first over every history."""
    stack = [state]
    while stack:
        s = stack.pop()
        visit(s)
        if s.is_terminal():
            continue
        actions = [a for a, _ in s.chance_outcomes()] if s.is_chance_node() else s.legal_actions()
        stack.extend(s.child(a) for a in actions)


def pyspiel_api_check(
    game: pyspiel.Game, name: str = "<game>", *, random_sim: bool = True, iterations: int = 20
) -> ApiReport:
    """OpenSpiel's `random_sim_test` with serialization (skip with `random_sim=False` when it
    ran already), a unique `str(state)` per history (OpenSpiel's nash_conv and cached tree key
    histories by it), C++ CFR+ on the cached tree, and a finite, non-negative NashConv of its
    average policy. Raises `ConformanceError` naming the check."""
    if random_sim:
        try:
            pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)
        except Exception as exc:
            raise fail(name, "random_sim_test", f"{type(exc).__name__}: {exc}") from exc
    seen: dict[str, tuple[int, ...]] = {}

    def visit(state: pyspiel.State) -> None:
        key, history = str(state), tuple(state.history())
        if seen.setdefault(key, history) != history:
            raise fail(name, "unique history strings", f"{history} and {seen[key]}: {key!r}")

    walk(game.new_initial_state(), visit)
    try:
        result = solve_cfr(game, solver="cfr+", iterations=iterations, allow_python_fallback=False)
        conv = nash_conv(result.game, result.policy)
    except pyspiel.SpielError as exc:
        raise fail(name, "C++ CFR on the cached tree", str(exc)) from exc
    if not math.isfinite(conv) or conv < -1e-9:
        raise fail(name, "NashConv", f"got {conv}")
    return ApiReport(histories=len(seen), info_states=len(result.policy), nash_conv=conv,
                     cfr_backend=result.backend)
