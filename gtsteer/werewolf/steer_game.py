"""The playstyle game: a pyspiel game over playstyles, built from a logged Werewolf state.

At a discussion turn of a real game, the next speakers (a werewolf and a village-side bot at
least) each pick a playstyle or `unsteered`; chance draws one of `num_llm_seeds` samples of the
message from the live bot code, so what is solved is what is played; at the terminal one
`choose` call predicts the day's elimination, and the village gets P(a werewolf out) - P(a
village-side player out), the wolves its negative. Players see the live hook's text
(`hook_view`). The game's day ends after its speakers, so a view's "Turns left today" tells the
horizon its target was solved for.

Its own class rather than the binding's `DialogueGame`, which renders YAML prompts: this game
must replay the Werewolf engine and bot context exactly. Size with S samples, A options and n
speakers: (A*S)^n leaves, as many prediction calls, sum_k (A*S)^k message calls.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyspiel
from pydantic import BaseModel, Field, field_validator

from gtsteer.binding.pyspiel_registry import register_game
from gtsteer.werewolf.bots import bot_decision
from gtsteer.werewolf.engine import pending, step
from gtsteer.werewolf.hook_view import hook_text, own_past_styles
from gtsteer.werewolf.llmcalls import CallRecord, LLMPool
from gtsteer.werewolf.playstyles import FixedPlaystyle, options_for
from gtsteer.werewolf.rules import Role, derive_seed
from gtsteer.werewolf.state import Decision, GameState, Pending

SHORT_NAME = "gtsteer_werewolf_playstyle"
_PARAMS: dict[str, Any] = {"key": ""}
#: What rebuilds a game of this process from its key (pyspiel deserializes through params).
#: Plain Python only: a pyspiel object held by a module global outlives the interpreter.
_LIVE: dict[str, tuple[GameState, LLMPool, PlaystyleGameConfig, NodeTables, int]] = {}
#: Chat lines the elimination predictor reads.
PREDICT_CHAT_LINES = 24


class PlaystyleGameError(ValueError):
    """The logged state cannot root a playstyle game (names the reason)."""


@dataclass
class NodeTables:
    """Node contents by action history, shared by every copy of one game (so a deserialized
    game makes no new LLM call), and the calls that filled them."""

    messages: dict[tuple[int, ...], GameState] = field(default_factory=dict)
    predictions: dict[tuple[int, ...], dict[str, float]] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    prediction_calls: int = 0


#: The game solves discussion turns, so its actions are a discussion decision's hook options.
DISCUSSION_OPTIONS: tuple[str, ...] = options_for("speak")


class PlaystyleGameConfig(BaseModel):
    num_llm_seeds: int = Field(1, ge=1, le=8)
    max_speakers: int = Field(2, ge=2, le=4)
    styles: list[str] = Field(default_factory=lambda: list(DISCUSSION_OPTIONS))

    @field_validator("styles")
    @classmethod
    def _known_styles(cls, v: list[str]) -> list[str]:
        unknown = [s for s in v if s not in DISCUSSION_OPTIONS]
        if unknown or len(v) < 2 or len(set(v)) != len(v):
            raise ValueError(f"styles: need 2+ distinct options of {list(DISCUSSION_OPTIONS)}, "
                             f"got {v}")
        return v


def _game_type(zero_sum: bool = False) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="gtsteer werewolf playstyle game",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=(pyspiel.GameType.Utility.ZERO_SUM if zero_sum
                 else pyspiel.GameType.Utility.GENERAL_SUM),
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=4,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=False,
        provides_factored_observation_string=False,
        parameter_specification=_PARAMS,
    )


def sample_line(state: GameState, want: Pending, pool: LLMPool, style: str, sample: int
                ) -> tuple[Decision, list[CallRecord]]:
    """Sample `sample` of `want.actor`'s line under `style`, by the live bot code: sample 0 is
    exactly the live decision, sample k varies only the message seed."""
    draw = state if sample == 0 else state.model_copy(
        update={"seed": derive_seed(state.seed, "playstyle-sample", sample)})
    return bot_decision(draw, want, pool, FixedPlaystyle(style))


def wolf_side(state: GameState, name: str) -> bool:
    return state.player(name).role is Role.WEREWOLF


def pick_speakers(state: GameState, max_speakers: int) -> list[str]:
    """The next speakers: the router's queue, then the living bots in seating order; cut to
    `max_speakers` keeping at least one werewolf and one village-side bot."""
    want = pending(state)
    if state.phase != "discussion" or want is None or want.kind not in ("speak", "route"):
        raise PlaystyleGameError(f"state at step {state.step} is not a discussion turn "
                                 f"(phase {state.phase})")
    bots = [p.name for p in state.players if p.alive and not p.human]
    order = [n for n in dict.fromkeys([*state.queue, *bots]) if n in bots]
    wolves = [n for n in order if wolf_side(state, n)]
    village = [n for n in order if not wolf_side(state, n)]
    if not wolves or not village:
        raise PlaystyleGameError("a playstyle game needs a living werewolf bot and a living "
                                 "village-side bot")
    chosen = order[:max_speakers]
    if not any(n in wolves for n in chosen):
        chosen[-1] = wolves[0]
    if not any(n in village for n in chosen):
        chosen[-1] = village[0]
    return [n for n in order if n in chosen]


def game_key(root: GameState, config: PlaystyleGameConfig, model: str,
             sample_offset: int = 0) -> str:
    blob = f"{root.model_dump_json()}|{config.model_dump_json()}|{model}"
    if sample_offset:  # the same position with other samples is another game
        blob += f"|samples+{sample_offset}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class PlaystyleGame(pyspiel.Game):
    """One logged discussion turn as a game over playstyles.

    `sample_offset` > 0 builds the same position with fresh samples (chance outcome k draws
    sample k + sample_offset) for the held-out measurement, `python -m lab werewolf-heldout`."""

    def __init__(self, state: GameState, pool: LLMPool | None = None,
                 config: PlaystyleGameConfig | None = None, tables: NodeTables | None = None,
                 sample_offset: int = 0):
        if sample_offset < 0:
            raise ValueError(f"sample_offset: must be >= 0, got {sample_offset}")
        self.config = config or PlaystyleGameConfig()
        self.sample_offset = sample_offset
        self.pool = pool or LLMPool()
        self.source = state
        self.speakers = pick_speakers(state, self.config.max_speakers)
        root = state.model_copy(deep=True)
        # The day ends after these speakers, so each is told the horizon the game is solved
        # for; with the logged day's limit, adjacent roots of one game would show one view
        # with two horizons, and so two targets.
        root.phase, root.queue = "discussion", list(self.speakers)
        root.config.max_messages_per_day = root.turns_today + len(self.speakers)
        self.root = root
        self.teams = ["werewolves" if wolf_side(root, n) else "village" for n in self.speakers]
        self.zero_sum = self.teams.count("village") == self.teams.count("werewolves")
        self.predictor = root.router_model
        self.key = game_key(state, self.config, self.predictor, sample_offset)
        n = len(self.speakers)
        super().__init__(
            _game_type(self.zero_sum),
            pyspiel.GameInfo(
                num_distinct_actions=len(self.config.styles),
                max_chance_outcomes=self.config.num_llm_seeds,
                num_players=n,
                min_utility=-1.0,
                max_utility=1.0,
                utility_sum=0.0 if self.zero_sum else None,
                max_game_length=2 * n,
            ),
            {"key": self.key},
        )
        #: Node contents by action history, filled lazily (or by `expand`).
        self.tables = tables or NodeTables()
        _LIVE[self.key] = (state, self.pool, self.config, self.tables, sample_offset)

    @property
    def calls(self) -> list[CallRecord]:
        return self.tables.calls

    @property
    def prediction_calls(self) -> int:
        return self.tables.prediction_calls

    def sizes(self) -> dict[str, int]:
        """Leaves and LLM calls of a full expansion (see the module docstring)."""
        per = len(self.config.styles) * self.config.num_llm_seeds
        n = len(self.speakers)
        return {"players": n, "actions": len(self.config.styles),
                "num_llm_seeds": self.config.num_llm_seeds, "leaves": per ** n,
                "message_calls": sum(per ** k for k in range(1, n + 1)),
                "prediction_calls": per ** n}

    def expand(self) -> int:
        """Make every LLM call now, not lazily inside CFR's first iteration; the leaves."""
        leaves = 0
        stack = [self.new_initial_state()]
        while stack:
            s = stack.pop()
            if s.is_terminal():
                s.returns()
                leaves += 1
                continue
            actions = ([a for a, _ in s.chance_outcomes()] if s.is_chance_node()
                       else s.legal_actions())
            stack.extend(s.child(a) for a in actions)
        return leaves

    def speak_pending(self, state: GameState, bot: str) -> Pending:
        """`bot`'s discussion turn in the game's day (also for pyspiel's views of players whose
        turn it is not)."""
        return Pending(kind="speak", actor=bot, turn=state.turns_today + 1,
                       turns_total=state.turn_limit())

    def after_message(self, history: tuple[int, ...], state: GameState, speaker: str,
                      style: str) -> GameState:
        messages = self.tables.messages
        if history not in messages:
            want = self.speak_pending(state, speaker)
            decision, records = sample_line(state, want, self.pool, style,
                                            history[-1] + self.sample_offset)
            self.tables.calls.extend(records)
            messages[history] = step(state, decision)
        return messages[history]

    def prediction(self, history: tuple[int, ...], state: GameState) -> dict[str, float]:
        """P(eliminated today) over the living, from one `choose` call on the discussion."""
        predictions = self.tables.predictions
        if history not in predictions:
            living = state.living()
            llm = self.pool.get(self.predictor)
            result = llm.choose_sync(predict_prompt(state), living,
                                     seed=derive_seed(state.seed, state.day, "predict-vote"))
            self.tables.prediction_calls += 1
            if result.method == "constrained":
                probs = {n: float(n == result.choice) for n in living}
            else:  # log-likelihoods (or the fake backend's stand-ins): softmax
                top = max(result.scores.values())
                w = {n: math.exp(result.scores[n] - top) for n in living}
                probs = {n: w[n] / sum(w.values()) for n in living}
            predictions[history] = probs
        return predictions[history]

    def team_values(self, probs: dict[str, float], state: GameState) -> dict[str, float]:
        wolf = sum(p for n, p in probs.items() if wolf_side(state, n))
        village = 2.0 * wolf - 1.0  # P(wolf out) - P(village-side out)
        return {"village": village, "werewolves": -village}

    def new_initial_state(self) -> PlaystyleState:
        return PlaystyleState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> PlaystyleObserver:
        return PlaystyleObserver()


def predict_prompt(state: GameState) -> str:
    """A neutral narrator's view: only public facts and today's public chat."""
    dead = [f"{p.name} ({p.role.value})" for p in state.players if not p.alive]
    chat = [f"{m.author}: {m.text}" for m in state.today_messages("public")]
    return "\n".join([
        (f"A game of Werewolf, day {state.day}. Living: {', '.join(state.living())}. "
        f"Dead: {', '.join(dead) or 'none'}."),
        "Today's discussion:",
        *(chat[-PREDICT_CHAT_LINES:] or ["(nobody spoke)"]),
        ("The discussion is over and the village votes now. The player the village eliminates "
        "today is:"),
    ])


class PlaystyleState(pyspiel.State):
    def __init__(self, game: PlaystyleGame):
        super().__init__(game)
        self._actions: list[int] = []
        self._turn = 0
        self._pending: int | None = None
        self.ww: GameState = game.root
        #: The style each speaker chose (None before its turn).
        self.chosen: list[str | None] = [None] * len(game.speakers)

    @property
    def _game(self) -> PlaystyleGame:
        # pyspiel clones by deep-copying __dict__: the game is looked up, never stored.
        return self.get_game()

    def current_player(self) -> int:
        if self._turn >= len(self._game.speakers):
            return pyspiel.PlayerId.TERMINAL
        if self._pending is not None:
            return pyspiel.PlayerId.CHANCE
        return self._turn

    def _legal_actions(self, player: int) -> list[int]:
        return list(range(len(self._game.config.styles)))

    def chance_outcomes(self) -> list[tuple[int, float]]:
        k = self._game.config.num_llm_seeds
        return [(i, 1.0 / k) for i in range(k)]

    def _apply_action(self, action: int) -> None:
        game = self._game
        self._actions.append(action)
        if self._pending is None:
            self._pending = action
            self.chosen[self._turn] = game.config.styles[action]
            return
        speaker = game.speakers[self._turn]
        style = game.config.styles[self._pending]
        self.ww = game.after_message(tuple(self._actions), self.ww, speaker, style)
        self._pending = None
        self._turn += 1

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"sample {action}"
        return self._game.config.styles[action]

    def is_terminal(self) -> bool:
        return self._turn >= len(self._game.speakers)

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0] * len(self._game.speakers)
        game = self._game
        values = game.team_values(game.prediction(tuple(self._actions), self.ww), self.ww)
        return [values[t] for t in game.teams]

    def rewards(self) -> list[float]:
        return self.returns()

    def hook_view(self, player: int) -> str:
        """The player's view: `hook_view`'s text of its own turn (own choice included)."""
        game = self._game
        bot = game.speakers[player]
        past = own_past_styles(self.ww, bot)
        text = hook_text(self.ww, bot, game.speak_pending(self.ww, bot), past)
        if self._turn == player and self._pending is not None:
            text += f"\n[chosen: {self.chosen[player]}]"
        return text

    def __str__(self) -> str:
        """Unique per history (the cached tree and nash_conv key states by this string)."""
        game = self._game
        lines = [f"history: {' '.join(map(str, self._actions))}".rstrip()]
        new = self.ww.messages[len(game.root.messages):]
        lines += [f"{m.author}: {m.text}" for m in new]
        return "\n".join(lines)


class PlaystyleObserver:
    """A player's information state is its hook view (its own styles in it: perfect recall)."""

    def __init__(self) -> None:
        self.tensor = np.zeros(0, np.float32)
        self.dict: dict[str, np.ndarray] = {}

    def set_from(self, state: PlaystyleState, player: int) -> None:
        pass

    def string_from(self, state: PlaystyleState, player: int) -> str:
        return state.hook_view(player)


def _from_params(params: dict[str, Any]) -> PlaystyleGame:
    key = params.get("key", "")
    if key not in _LIVE:
        raise PlaystyleGameError(f"{SHORT_NAME}: no live game with key {key!r} in this process "
                                 "(build it with PlaystyleGame(state, pool, config))")
    state, pool, config, tables, sample_offset = _LIVE[key]
    return PlaystyleGame(state, pool, config, tables, sample_offset)


register_game(_game_type(), _from_params)
