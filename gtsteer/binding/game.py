"""The pyspiel game of one dialogue instance.

History: a player chooses an instruction (action id = index in `game.instructions(p)`), then a
chance node picks one of `num_llm_seeds` equally likely samples of the message that instruction
produces (a per-depth list gives the message at depth d `spec.samples_at(d)` samples). Every
instruction becomes a message, players alternate, and the game ends after `num_max_replies`
messages per player or when the termination check says so.

With `num_deals` K > 1 the root is a chance node dealing one of K private-information draws
(`deal_instances`) that share the public part; a player's information state then holds only
its own private info, so the solver cannot use what the player does not know.

LLM results live in two layers: the persistent cache of `gtsteer.llm` (shared by processes and
runs) and per-game dictionaries keyed by the action history (so a solver's millions of
traversal steps never leave Python for the same node twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyspiel
from pydantic import BaseModel

from gtsteer.binding.cost_profile import record_message
from gtsteer.binding.instances import Instance, deal_instances, stable_int
from gtsteer.binding.judge import ask_judge
from gtsteer.binding.prompts import (
    Turn,
    clean_message,
    echo_patterns,
    message_end,
    message_request_prompt,
    message_stop,
    reads_chat,
    render_private_info,
    strip_instruction_echo,
    termination_prompt,
)
from gtsteer.binding.reward import Reward, RewardContext, compute_reward, payoff_bounds
from gtsteer.binding.shipped import DEFAULT_CONFIG
from gtsteer.binding.spec import DomainSpec
from gtsteer.llm import LLM, Message, run_sync

SHORT_NAME = "gtsteer_dialogue"
MAX_PLAYERS = 10
_DEFAULT_PARAMS: dict[str, Any] = {
    "config": DEFAULT_CONFIG,  # a path or a shipped config's name
    "instance": 0,
    "llm": "fake",
    "seed": 0,
    "num_games": 0,
    "deals": 0,  # 0: the spec's num_deals
    "key": "",
    # Added to every message's sample index when seeding it: a game with offset
    # num_llm_seeds draws fresh samples of the same positions (held-out CFR gain).
    "sample_offset": 0,
}
History = tuple[int, ...]


def _game_type(spec: DomainSpec | None = None) -> pyspiel.GameType:
    zero_sum = spec is not None and spec.payoff.zero_sum
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="gtsteer dialogue game",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=(
            pyspiel.GameType.Utility.ZERO_SUM if zero_sum else pyspiel.GameType.Utility.GENERAL_SUM
        ),
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=MAX_PLAYERS,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=False,
        provides_factored_observation_string=False,
        parameter_specification=_DEFAULT_PARAMS,
    )


def message_seed(instance_seed: int, samples: Sequence[int], speaker: int) -> int:
    """The seed of the message at the end of chance path `samples` (sample indices,
    offset included), spoken by `speaker` at turn len(samples) - 1."""
    return stable_int("gtsteer-message-path", instance_seed, list(samples), speaker,
                      len(samples) - 1)


class Request(BaseModel):
    """One text-generation request; a pure function of the history, hence one cache key.
    `prompt` is chat messages for an instruct model (`prompts.chat_message_prompt`)."""

    prompt: str | list[Message]
    seed: int
    temperature: float
    max_tokens: int
    stop: list[str]


class DialogueGame(pyspiel.Game):
    """One instance of a domain as an OpenSpiel game. Build with `make_game` (or, from a
    config path, `gtsteer.domains.load_game`)."""

    def __init__(
        self,
        spec: DomainSpec,
        instance: Instance,
        llm: LLM,
        params: dict[str, Any] | None = None,
    ):
        self.spec = spec
        #: The domain's code, bound to the spec when it was loaded (`DomainSpec.with_domain`).
        self.domain = spec.hooks
        self.instance = instance
        #: The private-information draws of this game: [instance] unless num_deals > 1.
        self.deals: list[Instance] = deal_instances(spec, instance)
        self.llm = llm
        self._instructions = spec.instructions()
        #: The action ids each message depth offers (all of them unless the spec has `turns`).
        self._legal = [spec.legal_instructions(d) for d in range(spec.reply_limit)]
        n = spec.num_players
        params = {**_DEFAULT_PARAMS, **(params or {})}
        self.sample_offset = int(params["sample_offset"])
        if self.sample_offset < 0:
            raise ValueError(f"sample_offset: must be >= 0, got {self.sample_offset}")
        bounds = [payoff_bounds(spec, deal) for deal in self.deals]
        super().__init__(
            _game_type(spec),
            pyspiel.GameInfo(
                num_distinct_actions=len(self._instructions),
                max_chance_outcomes=max(spec.max_llm_seeds, len(self.deals)),
                num_players=n,
                min_utility=min(lo for lo, _ in bounds),
                max_utility=max(hi for _, hi in bounds),
                utility_sum=0.0 if spec.payoff.zero_sum else None,
                max_game_length=2 * spec.reply_limit + int(self.dealt),
            ),
            params,
        )
        self.first_player = 0 if instance.opening is None else (spec.opening_speaker + 1) % n
        self.opening_turns = (
            []
            if instance.opening is None
            else [Turn(speaker=spec.opening_speaker, instruction=None, text=instance.opening)]
        )
        # Results by action history; filled by `expand` or lazily through the cached LLM.
        self.messages: dict[History, str] = {}
        self.terminations: dict[History, bool] = {}
        #: The judge's answer at each round end of a verdict game (a verdict or "continue").
        self.verdicts: dict[History, str] = {}
        self.rewards: dict[History, Reward] = {}
        #: Histories whose sampled message repeated its instruction (stripped before use).
        self.echoes: set[History] = set()
        #: Set by `expand` when a reward or message could not be obtained.
        self.failure: str | None = None

    @property
    def dealt(self) -> bool:
        """True when the root is a chance node over `deals` (private info really private)."""
        return len(self.deals) > 1

    # ---- actions ------------------------------------------------------------------------

    def instructions(self, player: int = 0) -> list[str]:
        """Action names of `player` (the same for every player); the action id is the index."""
        return list(self._instructions)

    def any_action(self, player: int = 0) -> int:
        """The id of the unguided baseline (every key set to "any")."""
        return self._instructions.index(self.spec.any_instruction())

    # ---- pyspiel ------------------------------------------------------------------------

    def new_initial_state(self) -> DialogueState:
        return DialogueState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> DialogueObserver:
        return DialogueObserver(
            iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params
        )

    # ---- LLM-backed node contents (pure functions of the history) -------------------------

    def message_request(
        self, turns: list[Turn], speaker: int, instruction: str, path: Sequence[int],
        deal: int = 0,
    ) -> Request:
        """The request of the message whose chance path is `path`: the sample indices of every
        message so far, this one's last. Its seed is drawn from the whole path, the speaker and
        the turn, so every message of the tree has its own random stream (llama.cpp's sampler
        draws by inverse CDF: one stream shared along a path gives coupled, comonotone
        messages). The instruction is left out, so the instructions at a node share random
        numbers (a paired comparison), and so are deals: the prompt (the speaker's own
        knowledge) alone decides the message. A game built with `sample_offset` k seeds sample
        i as sample i + k of the same position, at every step of the path."""
        gen = self.spec.generation
        instance = self.deals[deal]
        chat = self.chat
        samples = [int(k) + self.sample_offset for k in path]
        if not samples:
            raise ValueError("path: a message needs its sample index (got an empty path)")
        return Request(
            prompt=message_request_prompt(self.spec, instance, turns, speaker, instruction, chat),
            seed=message_seed(instance.seed, samples, speaker),
            temperature=gen.temperature,
            max_tokens=gen.max_tokens,
            stop=message_stop(self.spec, self.instance, speaker, chat),
        )

    def sample_path(self, history: History) -> tuple[int, ...]:
        """The sample indices of the messages along `history` (the deal and the
        instructions left out); a history ending in a sample ends with that message's."""
        return tuple(history[int(self.dealt) + 1::2])

    @property
    def chat(self) -> bool:
        """Whether messages are asked of an instruct model (chat form, chat cleaning)."""
        return reads_chat(self.llm)

    def termination_request(self, turns: list[Turn]) -> str:
        return termination_prompt(self.spec, self.instance, turns)

    @property
    def reply_limit(self) -> int:
        """Messages after which the dialogue ends regardless of the termination check."""
        return self.spec.reply_limit

    # Each node's content has one async definition: expansion gathers these concurrently, and
    # the synchronous versions that OpenSpiel's traversal calls run the same coroutine, so the
    # two can never fill the tables differently.

    async def amessage(
        self, history: History, turns: list[Turn], speaker: int, instruction: str, deal: int = 0
    ) -> str:
        """The message at chance history `history` (its last action is the sample index),
        trimmed to the speaker's words and with any verbatim repeat of the instruction removed."""
        if history not in self.messages:
            req = self.message_request(turns, speaker, instruction, self.sample_path(history),
                                      deal)
            instance = self.deals[deal]
            completion = await self.llm.generate(req.prompt, **req.model_dump(exclude={"prompt"}),
                                                 **message_end(instance, self.chat))
            patterns = echo_patterns(self.spec, instruction)
            cut = completion.usage.completion_tokens >= req.max_tokens
            raw = clean_message(completion.text, instance, self.chat, cut)
            text, echoed = strip_instruction_echo(raw, patterns)
            if not completion.cached:
                record_message(completion.text, text, cut)
            if echoed:
                self.echoes.add(history)
            self.messages[history] = text
        return self.messages[history]

    def message(
        self, history: History, turns: list[Turn], speaker: int, instruction: str, deal: int = 0
    ) -> str:
        if history in self.messages:
            return self.messages[history]
        return run_sync(self.amessage(history, turns, speaker, instruction, deal))

    @property
    def has_end_check(self) -> bool:
        return self.spec.termination_prompt is not None or self.spec.judge is not None

    async def aterminated(self, history: History, turns: list[Turn]) -> bool:
        """The optional LLM check "is the dialogue over?" (or the judge's verdict)."""
        if not self.has_end_check:
            return False
        if history not in self.terminations:
            if self.spec.judge is not None:
                replies = len(turns) - len(self.opening_turns)
                judgement = await ask_judge(
                    self.llm, self.spec, self.instance, turns,
                    final=replies >= self.reply_limit,
                    # seeded by the public transcript, not the history: the judge may not
                    # tell apart deals or instructions that produced the same words
                    seed=stable_int("gtsteer-judge", self.instance.seed,
                                    [[t.speaker, t.text] for t in turns]),
                )
                self.verdicts[history] = judgement.verdict
                ended = judgement.verdict != self.spec.judge.continue_label
            else:
                req = self.termination_request(turns)
                ended = (await self.llm.choose(req, ["yes", "no"], seed=0)).choice == "yes"
            self.terminations[history] = ended
        return self.terminations[history]

    def terminated(self, history: History, turns: list[Turn]) -> bool:
        if not self.has_end_check or history in self.terminations:
            return self.terminations.get(history, False)
        return run_sync(self.aterminated(history, turns))

    def reward_context(self, history: History, turns: list[Turn], deal: int = 0) -> RewardContext:
        return RewardContext(
            spec=self.spec, instance=self.deals[deal], transcript=turns, history=list(history),
            verdict=self.verdicts.get(history), llm=self.llm,
        )

    def reward(self, history: History, turns: list[Turn], deal: int = 0) -> Reward:
        if history not in self.rewards:
            ctx = self.reward_context(history, turns, deal)
            self.rewards[history] = run_sync(compute_reward(ctx))
        return self.rewards[history]

    @property
    def clipped_rewards(self) -> int:
        return sum(r.clipped for r in self.rewards.values())


class DialogueState(pyspiel.State):
    """A node: the public transcript, each turn's (private) instruction, and a pending choice."""

    def __init__(self, game: DialogueGame):
        super().__init__(game)
        self._actions: list[int] = []
        self.turns: list[Turn] = list(game.opening_turns)
        self._replies = 0
        self._pending: int | None = None
        self._over = False
        #: Index into `game.deals`; None at the root of a dealt game (not dealt yet).
        self.deal: int | None = None if game.dealt else 0

    # pyspiel clones a Python state by deep-copying its __dict__, which would copy the game
    # without its Python attributes; so the game is never stored, only looked up.
    @property
    def _game(self) -> DialogueGame:
        return self.get_game()

    # ---- structure ----------------------------------------------------------------------

    def _speaker(self) -> int:
        return (self._game.first_player + self._replies) % self._game.spec.num_players

    def current_player(self) -> int:
        if self._over:
            return pyspiel.PlayerId.TERMINAL
        if self._pending is not None or self.deal is None:
            return pyspiel.PlayerId.CHANCE
        return self._speaker()

    def is_deal_node(self) -> bool:
        """The root chance node of a dealt game (its outcomes are deals, not samples)."""
        return self.deal is None

    def _legal_actions(self, player: int) -> list[int]:
        return list(self._game._legal[self._replies])

    def chance_outcomes(self) -> list[tuple[int, float]]:
        game = self._game
        # the message being sampled is the dialogue's message number `_replies` (its depth)
        k = len(game.deals) if self.deal is None else game.spec.samples_at(self._replies)
        return [(i, 1.0 / k) for i in range(k)]

    def _apply_action(self, action: int) -> None:
        game = self._game
        if self.deal is None:
            self.deal = action
            self._actions.append(action)
            return
        if self._pending is None:
            self._pending = action
            self._actions.append(action)
            return
        self._actions.append(action)
        history = tuple(self._actions)
        speaker = self._speaker()
        instruction = game.instructions(speaker)[self._pending]
        text = game.message(history, self.turns, speaker, instruction, self.deal)
        self.turns = [*self.turns, Turn(speaker=speaker, instruction=instruction, text=text)]
        self._pending = None
        self._replies += 1
        ended = game.spec.end_check_after(self._replies) and game.terminated(history, self.turns)
        self._over = ended or self._replies >= game.reply_limit

    def apply_message(self, text: str, sample: int = 0) -> None:
        """At a message's chance node, apply outcome `sample` with `text` as its message instead
        of the model's: a person's words (`gtsteer play`), which then meet the same end check
        and reward as any message. The text is kept in this game's table for that history, so
        play such a game once."""
        if self.deal is None or self._pending is None:
            raise ValueError("apply_message: the state is not at a message's chance node")
        self._game.messages[(*self._actions, sample)] = text
        self.apply_action(sample)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"sample {action}" if self.deal is not None else f"deal {action}"
        return self._game.instructions(player)[action]

    def is_terminal(self) -> bool:
        return self._over

    def returns(self) -> list[float]:
        if not self._over:
            return [0.0] * self._game.spec.num_players
        return list(self._game.reward(tuple(self._actions), self.turns, self.deal or 0).returns)

    def rewards(self) -> list[float]:
        return self.returns()

    # ---- views --------------------------------------------------------------------------

    @property
    def current_speaker(self) -> int:
        """Who speaks next (at a chance node: whose message is being sampled)."""
        return self._speaker()

    @property
    def replies(self) -> int:
        """Messages sent so far (the opening excluded)."""
        return self._replies

    @property
    def history_key(self) -> History:
        return tuple(self._actions)

    @property
    def pending_instruction(self) -> str | None:
        if self._pending is None:
            return None
        return self._game.instructions(self._speaker())[self._pending]

    def info_state(self, player: int) -> str:
        """Private info + public transcript + the player's own instructions (perfect recall)."""
        return self._view(player, own_instructions=True)

    def observation(self, player: int) -> str:
        """What `player` sees now: private info and the public transcript."""
        return self._view(player, own_instructions=False)

    def _view(self, player: int, own_instructions: bool) -> str:
        game = self._game
        names = game.instance.names  # public: the same in every deal
        lines = [f"[{names[player]}, player {player}]"]
        if self.deal is None:
            lines.append("[private info not dealt yet]")
        else:
            lines.append(render_private_info(game.deals[self.deal].private_info[player]))
        lines.append("[transcript]")
        for t in self.turns:
            tag = names[t.speaker]
            if own_instructions and t.speaker == player and t.instruction is not None:
                tag += f" ({t.instruction})"
            lines.append(f"{tag}: {t.text}")
        if own_instructions and self._pending is not None and self._speaker() == player:
            lines.append(f"[chosen: {self.pending_instruction}]")
        return "\n".join(lines)

    def __str__(self) -> str:
        """Unique per history: OpenSpiel's nash_conv and cached tree key histories by this
        string, and two histories can produce the same messages, so the action history leads."""
        names = self._game.instance.names
        out = [f"history: {' '.join(map(str, self._actions))}".rstrip()]
        if self._game.dealt:
            out.append("deal: -" if self.deal is None else f"deal: {self.deal}")
        out += [f"{names[t.speaker]} [{t.instruction or '-'}]: {t.text}" for t in self.turns]
        if self._pending is not None:
            out.append(f"{names[self._speaker()]} [{self.pending_instruction}]: <sampling>")
        return "\n".join(out)


class DialogueObserver:
    """PyObserver: strings only (infostate = perfect recall, observation = current view)."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType, params: Any):
        self.iig_obs_type = iig_obs_type
        self.tensor = np.zeros(0, np.float32)
        self.dict: dict[str, np.ndarray] = {}

    def set_from(self, state: DialogueState, player: int) -> None:
        pass

    def string_from(self, state: DialogueState, player: int) -> str:
        if self.iig_obs_type.perfect_recall:
            return state.info_state(player)
        return state.observation(player)
