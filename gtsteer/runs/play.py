"""`gtsteer play CONFIG`: one live dialogue of a config, each seat steered its own way
(`--seat NAME=KIND`: `any`, `greedy`, `fixed:INSTRUCTION`, `policy:DIR` or `human`; see
docs/IMITATION.md, "Live play").

The dialogue is the config's game itself (`DialogueGame`): a bot's message is the game's
message for its instruction at chance outcome 0 of a game whose samples start at `--sample`, a
person's words go in through `DialogueState.apply_message`, and the end check and the reward
are the game's. So a bot-only play on an instruction path ends with the payoffs of the tree's
terminal on that path. `play_dialogue` is the loop (no file, no terminal), which
`gtsteer evaluate` reuses; `run` writes `play.json`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from gtsteer.binding import DialogueGame, DialogueState, make_game, make_instance
from gtsteer.binding.instances import Instance, stable_int
from gtsteer.binding.prompts import render_private_info
from gtsteer.binding.spec import DomainSpec
from gtsteer.binding.terminals import TerminalRow, terminal_rows
from gtsteer.domains import load_spec
from gtsteer.imitation.advisor import Advisor, draw
from gtsteer.imitation.views import dialogue_of
from gtsteer.llm import LLMCalls
from gtsteer.runs.context import Options, RunContext, driver
from gtsteer.runs.models import RoleRecord
from gtsteer.runs.output import RunResult, check_out_dir, finish_run_dir, prepare_run_dir
from gtsteer.runs.solve import check_seed
from gtsteer.solvers.heldout import greedy_instruction

SUMMARY_FILE = "play.json"
SeatKind = Literal["any", "greedy", "fixed", "policy", "human"]
KINDS: tuple[SeatKind, ...] = ("any", "greedy", "fixed", "policy", "human")


class SeatError(ValueError):
    """A `--seat` that names no player, an unknown kind, an instruction or policy that does not
    fit the config, or `greedy` in a domain without a greedy hook."""


@dataclass(frozen=True)
class Move:
    """A seat's turn: the instruction the model writes under, or a person's own text."""

    instruction: str | None
    text: str | None = None
    #: The policy's distribution the instruction was drawn from (policy seats).
    probs: dict[str, float] | None = None


class HumanTurn(BaseModel):
    """What a person at a seat is shown when asked for a message: only their own notes."""

    player: int
    name: str
    role: str
    #: Their private information, rendered as the model's prompt renders it.
    notes: str
    #: Messages sent so far (the opening not counted).
    replies: int


#: Asked for a person's message; returns the text (the CLI reads the terminal).
AskHuman = Callable[[HumanTurn], str]
#: A seat: (state, acting player) -> its move.
SeatPlayer = Callable[[DialogueState, int], Move]


class PlayedTurn(BaseModel):
    """One message of the played dialogue (the opening has no seat and no instruction)."""

    speaker: int
    name: str
    seat: str
    instruction: str | None
    text: str
    probs: dict[str, float] | None = None


class PlayedSeat(BaseModel):
    player: int
    name: str
    role: str
    #: The seat as given (`any`, `greedy`, `fixed:...`, `policy:DIR`, `human`).
    seat: str
    #: The instruction a `greedy` seat plays (None for other kinds).
    greedy: str | None = None


class PlayResult(RunResult):
    """play.json: the dialogue, who played each seat, the reward's reading and the payoffs."""

    config: str
    domain: str
    model: str
    roles: dict[str, RoleRecord] = Field(default_factory=dict)
    seed: int
    instance: int
    sample: int
    seats: list[PlayedSeat]
    turns: list[PlayedTurn]
    #: Why the dialogue ended: `reply limit`, `termination check` or `judge`.
    ended_by: str
    #: The finished dialogue as `gtsteer solve` records terminals (the game's instructions,
    #: a person's turn under `any`), with the judge's verdict, what the reward model or
    #: utility said (`raw`) and what the game paid (`returns`).
    terminal: TerminalRow
    #: Each player's payoff by name.
    payoffs: dict[str, float]
    llm_calls: LLMCalls


class PlayOptions(Options):
    """`gtsteer play`'s options (the model and the folder come with the run context)."""

    #: Seed of the generated instances (as `gtsteer solve --seed`) and of the policies' draws.
    seed: int = 0
    #: Which generated instance is played.
    instance: int = Field(0, ge=0)
    #: Bot messages are samples `sample`, `sample`+1... of each position's messages.
    sample: int = Field(0, ge=0)
    #: `NAME=KIND` per seat (NAME: a role or the instance's player name); others play `any`.
    seats: tuple[str, ...] = ()


# ---- seats ------------------------------------------------------------------------------------


def parse_seats(spec: DomainSpec, instance: Instance, given: Sequence[str]) -> list[str]:
    """The seat of each player (in player order) from `NAME=KIND` words; `any` where unnamed."""
    seats = ["any"] * spec.num_players
    named: set[int] = set()
    for word in given:
        name, sep, kind = word.partition("=")
        name, kind = name.strip(), kind.strip()
        if not sep or not name or not kind:
            raise SeatError(f"--seat {word!r}: expected NAME=KIND, e.g. {spec.players[0]}=any")
        player = _player(spec, instance, name)
        if player in named:
            raise SeatError(f"--seat {word!r}: {name} has a seat already")
        head = kind.split(":", 1)[0]
        if head not in KINDS or (head in ("fixed", "policy")) != (":" in kind):
            raise SeatError(f"--seat {word!r}: KIND is any, greedy, human, fixed:INSTRUCTION or "
                            "policy:DIR")
        seats[player] = kind
        named.add(player)
    return seats


def _player(spec: DomainSpec, instance: Instance, name: str) -> int:
    for names in (spec.players, instance.names):
        if name in names:
            return list(names).index(name)
    raise SeatError(f"--seat: {name!r} is neither a role {spec.players} nor a player of "
                    f"instance {instance.index} {instance.names}")


def seat_players(spec: DomainSpec, instance: Instance, seats: Sequence[str], seed: int,
                 ask_human: AskHuman | None) -> list[SeatPlayer]:
    """One move function per seat; every seat is checked before any model call."""
    return [_seat(spec, instance, p, kind, seed, ask_human) for p, kind in enumerate(seats)]


def _seat(spec: DomainSpec, instance: Instance, player: int, kind: str, seed: int,
          ask_human: AskHuman | None) -> SeatPlayer:
    head, _, arg = kind.partition(":")
    where = f"--seat {spec.players[player]}={kind}"
    if head == "any":
        return lambda state, p: Move(spec.any_instruction())
    if head == "fixed":
        if arg not in spec.instructions():
            raise SeatError(f"{where}: {arg!r} is not an instruction of {spec.name!r}; one of "
                            f"{spec.instructions()}")
        return lambda state, p: Move(arg)
    if head == "greedy":
        if spec.hooks.greedy is None:
            raise SeatError(f"{where}: the domain of {spec.name!r} has no greedy hook "
                            "(Domain.greedy); use fixed:INSTRUCTION")

        def greedy(state: DialogueState, p: int) -> Move:
            return Move(_greedy(spec, _deal(state).private_info[p], where))

        _greedy(spec, instance.private_info[player], where)  # checked before any call
        return greedy
    if head == "policy":
        try:
            advisor = Advisor(spec, arg)
        except (FileNotFoundError, ValueError) as exc:
            raise SeatError(f"{where}: {exc}") from None
        # one random stream per seat and dialogue: the same seed replays the same draws
        rng = random.Random(stable_int("gtsteer-play", seed, instance.index, player))

        def policy(state: DialogueState, p: int) -> Move:
            probs = advisor.advise(dialogue_of(state, p))
            return Move(draw(probs, rng.random()), probs=probs)

        return policy
    if ask_human is None:
        raise SeatError(f"{where}: a human seat needs a terminal (gtsteer play, interactive)")

    def human(state: DialogueState, p: int) -> Move:
        me = _deal(state)
        text = ask_human(HumanTurn(player=p, name=me.names[p], role=spec.players[p],
                                   notes=render_private_info(me.private_info[p]),
                                   replies=state.replies)).strip()
        if not text:
            raise SeatError(f"{me.names[p]}: an empty message")
        return Move(None, text=text)

    return human


def _greedy(spec: DomainSpec, info: dict[str, str], where: str) -> str:
    chosen = greedy_instruction(spec, info)
    if chosen is None:
        raise SeatError(f"{where}: the greedy hook names no instruction of {spec.name!r}")
    return chosen


def _deal(state: DialogueState) -> Instance:
    game: DialogueGame = state.get_game()
    return game.deals[state.deal or 0]


# ---- the loop ---------------------------------------------------------------------------------


def play_dialogue(game: DialogueGame, players: Sequence[SeatPlayer], seats: Sequence[str],
                  on_turn: Callable[[PlayedTurn], None] | None = None
                  ) -> tuple[DialogueState, list[PlayedTurn]]:
    """Play `game` once: each decision by its seat's move, each bot message at chance outcome
    0, a person's text in place of the model's; returns the terminal state and the turns (the
    opening first). A dealt game plays deal 0, the instance's own private information."""
    state = game.new_initial_state()
    if state.is_chance_node() and state.is_deal_node():
        state.apply_action(0)
    names = game.instance.names
    turns = [PlayedTurn(speaker=t.speaker, name=names[t.speaker], seat="opening",
                        instruction=None, text=t.text) for t in state.turns]
    for turn in turns:
        if on_turn is not None:
            on_turn(turn)
    while not state.is_terminal():
        player = state.current_player()
        move = players[player](state, player)
        labels = game.instructions(player)
        state.apply_action(labels.index(move.instruction or game.spec.any_instruction()))
        if move.text is not None:
            state.apply_message(move.text)
        else:
            state.apply_action(0)
        said = state.turns[-1]
        turn = PlayedTurn(speaker=player, name=names[player], seat=seats[player],
                          instruction=move.instruction, text=said.text, probs=move.probs)
        turns.append(turn)
        if on_turn is not None:
            on_turn(turn)
    return state, turns


def ended_by(game: DialogueGame, state: DialogueState) -> str:
    """`judge` (a verdict game's judge ends it), `reply limit` or `termination check`."""
    if game.spec.judge is not None:
        return "judge"
    return "reply limit" if state.replies >= game.reply_limit else "termination check"


# ---- the driver -------------------------------------------------------------------------------


@driver("play")
def run(config: str | Path, ctx: RunContext, options: PlayOptions) -> PlayResult:
    """`gtsteer play`: check every seat, play the dialogue, score it, write play.json. A human
    seat's message is asked of `ctx.ask_human`; each message said is handed to `ctx.on_step`."""
    if ctx.out is not None:
        check_out_dir(ctx.out)
    check_seed(options.seed)
    spec = load_spec(config)
    instance = make_instance(spec, options.instance, options.seed)
    seats = parse_seats(spec, instance, options.seats)
    players = seat_players(spec, instance, seats, options.seed, ctx.ask_human)
    model, _, role_models = ctx.roles(spec)
    out = ctx.folder("play", config, model, options.seed)
    prepare_run_dir(out, summary=SUMMARY_FILE)
    before = model.usage
    game = make_game(spec, instance, model, config=str(config), seed=options.seed,
                     sample_offset=options.sample)
    state, turns = play_dialogue(game, players, seats, ctx.on_step)
    returns = state.returns()
    (terminal,) = terminal_rows(game)
    result = PlayResult(
        config=str(config), domain=spec.name, model=model.model, roles=role_models,
        seed=options.seed, instance=options.instance, sample=options.sample,
        seats=[PlayedSeat(player=p, name=instance.names[p], role=spec.players[p], seat=kind,
                          greedy=_greedy(spec, instance.private_info[p], kind)
                          if kind == "greedy" else None)
               for p, kind in enumerate(seats)],
        turns=turns, ended_by=ended_by(game, state), terminal=terminal,
        payoffs={instance.names[p]: v for p, v in enumerate(returns)},
        llm_calls=model.usage.since(before),
    )
    finish_run_dir(out, SUMMARY_FILE, result)
    return result.written_to(out)
