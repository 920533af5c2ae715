"""The conformance check every domain config passes (PettingZoo's `api_test`, for gtsteer).

`check_config(path)` builds a game of the config with the offline `fake` model and checks what
every solver and metric relies on: OpenSpiel's `random_sim_test` with serialization, full
expansion, C++ CFR on the cached tree with a finite NashConv, a unique string per history,
information states that hold only the player's own private information, and messages that
never repeat their instruction. `tests/test_conformance.py` runs it over `configs/*.yaml`, so a
new domain is checked the moment its YAML lands.

`playthrough(game)` writes one full game as text (OpenSpiel's recorded playthroughs): the
regression files under `tests/data/playthroughs/` (`scripts/record_playthroughs.py`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyspiel
from pydantic import BaseModel

from gtsteer.binding.expand import expand_sync
from gtsteer.binding.game import DialogueGame, DialogueState
from gtsteer.binding.instances import make_instance
from gtsteer.binding.loader import make_game
from gtsteer.binding.prompts import (
    contains_instruction,
    echo_patterns,
    instruction_parts,
    render_private_info,
)
from gtsteer.binding.spec import ANY, DomainSpec, load_spec, spec_from_dict
from gtsteer.llm import LLM

#: Leaves above which the check solves a smaller variant of the config (same prompts/payoffs).
MAX_LEAVES = 4096
#: How the check solves (gtsteer.solvers.cfr names its C++ path the same way).
CFR_BACKEND = "open_spiel C++ CFRPlusSolver on convert_to_cached_tree"


class ConformanceError(AssertionError):
    """A config failed a conformance check; the message names the check and the config."""


class ConformanceReport(BaseModel):
    config: str
    #: How the checked variant differs from the config ([] when the config itself was checked).
    reduced: list[str]
    histories: int
    info_states: int
    messages: int
    echoed_messages: int
    nash_conv: float
    cfr_backend: str


def leaves_bound(spec: DomainSpec) -> int:
    """Leaves of the full tree when no dialogue ends early (an upper bound)."""
    actions = math.prod(len(v) for v in spec.actions.values())
    per_message = actions * spec.num_llm_seeds
    return per_message ** (spec.num_players * spec.num_max_replies) * spec.num_deals


def reduced_spec(spec: DomainSpec, max_leaves: int = MAX_LEAVES) -> tuple[DomainSpec, list[str]]:
    """The spec, or a smaller variant when its tree exceeds `max_leaves`: one LLM sample, then
    one instruction value (and `any`) per key, then one reply each; never dealt."""
    data = spec.model_dump()
    notes: list[str] = []

    def reduce(field: str, value: Any, note: str) -> None:
        data[field] = value
        notes.append(note)

    def too_big() -> bool:
        return leaves_bound(spec_from_dict(data)) > max_leaves

    if data["num_deals"] > 1:
        reduce("num_deals", 1, "num_deals -> 1 (the dealt mode gets random_sim_test only)")
    if too_big() and data["num_llm_seeds"] > 1:
        reduce("num_llm_seeds", 1, "num_llm_seeds -> 1")
    if too_big():
        fewer = {k: [*[v for v in vs if v != ANY][:1], ANY] for k, vs in data["actions"].items()}
        reduce("actions", fewer, "actions -> one value and any per key")
        # The trimmed values' definitions go too (a definition must name a value of its key).
        data["instruction_definitions"] = {
            k: {v: text for v, text in defs.items() if v in fewer[k]}
            for k, defs in data["instruction_definitions"].items()
        }
    if too_big() and data["num_max_replies"] > 1:
        reduce("num_max_replies", 1, "num_max_replies -> 1")
    return spec_from_dict(data, "conformance variant"), notes


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


def _fail(config: str, check: str, detail: str) -> ConformanceError:
    return ConformanceError(f"{config}: conformance check `{check}` failed: {detail}")


def check_game(game: DialogueGame, config: str = "<game>") -> ConformanceReport:
    """Every check on one built game (expands it with its own LLM)."""
    try:
        pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)
    except Exception as exc:
        raise _fail(config, "random_sim_test", f"{type(exc).__name__}: {exc}") from exc
    report = expand_sync(game, progress=False)
    if report.failed:
        raise _fail(config, "expand", str(report.reason))
    seen: dict[str, tuple[int, ...]] = {}
    info_states: set[str] = set()

    def visit(state: pyspiel.State) -> None:
        key, history = str(state), tuple(state.history())
        if seen.setdefault(key, history) != history:
            raise _fail(config, "unique history strings", f"{history} and {seen[key]}: {key!r}")
        if not isinstance(state, DialogueState):
            raise _fail(config, "DialogueState", f"a {type(state).__name__} in the tree")
        if not state.is_terminal() and not state.is_chance_node():
            info_states.add(state.information_state_string())
        _check_views(game, state, config)

    walk(game.new_initial_state(), visit)
    conv = _cfr_nash_conv(game, config)
    return ConformanceReport(
        config=config, reduced=[], histories=len(seen), info_states=len(info_states),
        messages=len(game.messages), echoed_messages=len(game.echoes), nash_conv=conv,
        cfr_backend=CFR_BACKEND,
    )  # fmt: skip


def _cfr_nash_conv(game: pyspiel.Game, config: str, iterations: int = 20) -> float:
    """NashConv of C++ CFR+ run on the cached tree. OpenSpiel directly, not gtsteer.solvers:
    binding sits below solvers (DESIGN.md), and the check needs only that the C++ path works."""
    try:
        tree = pyspiel.convert_to_cached_tree(game)
        solver = pyspiel.CFRPlusSolver(tree)
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        conv = float(pyspiel.nash_conv(tree, solver.average_policy()))
    except pyspiel.SpielError as exc:
        raise _fail(config, "C++ CFR on the cached tree", str(exc)) from exc
    if not math.isfinite(conv) or conv < -1e-9:
        raise _fail(config, "NashConv", f"got {conv}")
    return conv


def _check_views(game: DialogueGame, state: DialogueState, config: str) -> None:
    """Own private info in, others' out; no instruction shown to anyone but its speaker."""
    if state.deal is None:
        return
    deal = game.deals[state.deal]
    names = game.instance.names
    for player in range(game.num_players()):
        view = state.information_state_string(player)
        own = render_private_info(deal.private_info[player])
        if own and own not in view:
            raise _fail(config, "private info", f"player {player} does not see its own info")
        for other in range(game.num_players()):
            theirs = render_private_info(deal.private_info[other])
            if other != player and theirs and theirs != own and theirs in view:
                raise _fail(config, "private info", f"player {player} sees player {other}'s")
        for turn in state.turns:
            if turn.instruction is None:
                continue
            patterns = echo_patterns(game.spec, turn.instruction)
            if contains_instruction(turn.text, patterns):
                raise _fail(config, "no instruction echo", f"{turn.text!r} carries an instruction")
            parts = instruction_parts(game.spec, turn.instruction, names[turn.speaker])
            tag = f"{names[turn.speaker]} ({turn.instruction})"
            if turn.speaker != player and (tag in view or any(part in view for part in parts)):
                raise _fail(config, "no instruction echo", f"player {player} sees {parts or tag}")


def check_config(
    path: str | Path, llm: str | LLM = "fake", *, max_leaves: int = MAX_LEAVES
) -> ConformanceReport:
    """Check a config (or its smaller variant, see `reduced_spec`); raises `ConformanceError`.

    Pass an echoing test model as `llm` to exercise the echo stripping on the config's own
    instruction templates. The dealt mode (two deals) is checked with `random_sim_test` too.
    """
    config = str(path)
    spec, notes = reduced_spec(load_spec(path), max_leaves)
    client = llm if isinstance(llm, LLM) else LLM(llm)
    game = make_game(spec, make_instance(spec, 0), client)
    report = check_game(game, config)
    dealt = make_game(spec.with_deals(2), make_instance(spec, 0), client)
    try:
        pyspiel.random_sim_test(dealt, num_sims=3, serialize=True, verbose=False)
    except Exception as exc:
        raise _fail(config, "random_sim_test (dealt)", f"{type(exc).__name__}: {exc}") from exc
    return report.model_copy(update={"reduced": notes})


# ---- recorded playthroughs -------------------------------------------------------------------


def playthrough(game: DialogueGame, seed: int = 0) -> str:
    """One full game as text: every state, the players' information states and observations,
    the legal actions, the action taken (chance by its probabilities, players uniformly at
    random from `seed`) and the returns. Byte-identical for identical inputs."""
    rng = random.Random(seed)
    spec = game.spec
    lines = [
        f"domain: {spec.name}",
        (
            f"players: {spec.num_players} · actions: {game.num_distinct_actions()} ·"
            f" samples: {spec.num_llm_seeds} · replies: {spec.num_max_replies} ·"
            f" deals: {len(game.deals)}"
        ),
        f"utility range: [{game.min_utility():g}, {game.max_utility():g}]",
        f"instance: {game.instance.model_dump_json()}",
        "",
    ]
    state = game.new_initial_state()
    while True:
        lines.append(f"# history: {state.history()}")
        lines.append("state:")
        lines += [f"  {ln}" for ln in str(state).splitlines()]
        if state.is_terminal():
            lines.append(f"returns: {[round(r, 6) for r in state.returns()]}")
            break
        for p in range(game.num_players()):
            lines.append(f"information state {p}:")
            lines += [f"  {ln}" for ln in state.information_state_string(p).splitlines()]
            lines.append(f"observation {p}:")
            lines += [f"  {ln}" for ln in state.observation_string(p).splitlines()]
        player = state.current_player()
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            lines.append(f"chance outcomes: {[(a, round(p, 6)) for a, p in outcomes]}")
            action = rng.choices([a for a, _ in outcomes], [p for _, p in outcomes])[0]
        else:
            legal = state.legal_actions()
            lines.append(f"current player: {player}")
            named = [(a, state.action_to_string(player, a)) for a in legal]
            lines.append(f"legal actions: {named}")
            action = rng.choice(legal)
        lines.append(f"action: {action} ({state.action_to_string(player, action)})")
        lines.append("")
        state.apply_action(action)
    return "\n".join(lines) + "\n"


def record_playthrough(path: str | Path, llm: str | LLM = "fake", seed: int = 0) -> str:
    """The playthrough of instance 0 of a config, as configured, with the `fake` model."""
    spec = load_spec(path)
    return playthrough(make_game(spec, make_instance(spec, 0), llm), seed)
