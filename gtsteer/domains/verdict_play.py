"""Playing a verdict game live, with the paper's two questioner policies (arXiv 2501.18455).

- `NaiveQuestioner`: sample one unguided message, as a plain LLM would.
- `StrategicQuestioner`: sample `breadth` candidate messages, score each by the judge's
  probability of the target verdict ("guilty") after it, and play the best; with `depth` > 1
  each candidate is scored by the best continuation `depth - 1` exchanges further (the other
  side answers with one unguided sample).

The other player always plays unguided. Everything goes through the cached LLM layer and every
seed is a function of (instance, game seed, round, candidate), so a rerun makes no new call and
gives the same games. The judge is the spec's classifier (`gtsteer.binding.judge`), optionally
with another prompt wording and temperature, which is what the robustness check varies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel

from gtsteer.binding.instances import Instance, stable_int
from gtsteer.binding.judge import ask_judge, judge_options, judge_prompt, probabilities
from gtsteer.binding.prompts import (
    Turn,
    clean_message,
    message_end,
    message_request_prompt,
    message_stop,
    reads_chat,
)
from gtsteer.binding.spec import DomainSpec
from gtsteer.domains.verdict import verdict_table
from gtsteer.llm import LLM


@dataclass(frozen=True)
class JudgeSetting:
    """One judge of the robustness grid: a prompt wording and a sampling temperature."""

    prompt_index: int
    temperature: float


@dataclass
class Table:
    """What a policy needs to act: the game so far and the judge it plays against."""

    llm: LLM
    spec: DomainSpec
    instance: Instance
    judge: JudgeSetting
    game_seed: int
    turns: list[Turn] = field(default_factory=list)
    #: Turns before the first round (the spec's opening message, if any).
    opening: int = 0

    @property
    def judge_template(self) -> str:
        assert self.spec.judge is not None
        return self.spec.judge.prompts[self.judge.prompt_index]

    def rounds_done(self, turns: list[Turn] | None = None) -> int:
        return (len(self.turns if turns is None else turns) - self.opening) // self.spec.num_players


async def sample_message(
    table: Table, turns: list[Turn], speaker: int, seed_parts: tuple, instruction: str | None = None
) -> Turn:
    """One unguided (or `instruction`-guided) message of `speaker` after `turns`."""
    spec, inst = table.spec, table.instance
    label = instruction or spec.any_instruction()
    chat = reads_chat(table.llm)
    max_tokens = spec.generation.max_tokens
    completion = await table.llm.generate(
        message_request_prompt(spec, inst, turns, speaker, label, chat),
        seed=stable_int("gtsteer-verdict-play", inst.seed, table.game_seed, *seed_parts),
        temperature=spec.generation.temperature,
        max_tokens=max_tokens,
        stop=message_stop(spec, inst, speaker, chat),
        **message_end(inst, chat),
    )
    cut = completion.usage.completion_tokens >= max_tokens
    return Turn(speaker=speaker, instruction=label,
                text=clean_message(completion.text, inst, chat, cut))


async def target_probability(table: Table, turns: list[Turn], final: bool) -> float:
    """The judge's probability of the questioner's target verdict after `turns`."""
    spec = table.spec
    assert spec.judge is not None
    options = judge_options(spec.judge, final)
    prompt = judge_prompt(spec, table.instance, turns, options, table.judge_template)
    result = await table.llm.choose(prompt, options)
    return probabilities(result.scores)[verdict_table(spec).target_verdict]


class Questioner(Protocol):
    name: str

    async def message(self, table: Table, speaker: int) -> Turn: ...


class NaiveQuestioner:
    """One unguided sample, like a plain LLM."""

    name = "naive"

    async def message(self, table: Table, speaker: int) -> Turn:
        return await sample_message(table, table.turns, speaker, ("q", table.rounds_done(), 0))


class StrategicQuestioner:
    """Best of `breadth` candidates by the judge's target-verdict probability, `depth` ahead."""

    name = "strategic"

    def __init__(self, breadth: int = 10, depth: int = 1):
        if breadth < 1 or depth < 1:
            raise ValueError(f"breadth and depth must be >= 1, got {breadth}, {depth}")
        self.breadth, self.depth = breadth, depth

    async def message(self, table: Table, speaker: int) -> Turn:
        _, best = await self._search(table, table.turns, speaker, self.depth)
        return best

    async def _search(
        self, table: Table, turns: list[Turn], speaker: int, depth: int
    ) -> tuple[float, Turn]:
        spec = table.spec
        n = spec.num_players
        round_index = table.rounds_done(turns)
        last_round = round_index + 1 >= spec.num_max_replies
        # candidate 0 is the naive questioner's sample: the two policies differ only by search
        candidates = [
            await sample_message(table, turns, speaker, ("q", round_index, k))
            for k in range(self.breadth)
        ]
        scored: list[tuple[float, Turn]] = []
        for cand in candidates:
            after = [*turns, cand]
            if depth > 1 and not last_round:
                # the rest of the round unguided, then the best continuation one level down
                for other in range(1, n):
                    who = (speaker + other) % n
                    after.append(
                        await sample_message(table, after, who, ("a", round_index, who))
                    )
                score, _ = await self._search(table, after, speaker, depth - 1)
            else:
                score = await target_probability(table, after, final=last_round)
            scored.append((score, cand))
        best = max(range(len(scored)), key=lambda i: scored[i][0])  # first best on ties
        return scored[best]


class GameOutcome(BaseModel):
    instance: int
    player_type: str | None
    verdict: str
    rounds: int
    returns: list[float]
    win: bool
    transcript: list[Turn]


async def play_verdict_game(
    llm: LLM,
    spec: DomainSpec,
    instance: Instance,
    questioner: Questioner,
    judge: JudgeSetting,
    game_seed: int = 0,
) -> GameOutcome:
    """One game: the questioner policy against an unguided opponent, judged after every round."""
    table_spec = verdict_table(spec)
    assert spec.judge is not None
    n = spec.num_players
    table = Table(llm=llm, spec=spec, instance=instance, judge=judge, game_seed=game_seed)
    first = 0
    if instance.opening is not None:
        table.turns.append(Turn(speaker=spec.opening_speaker, instruction=None,
                                text=instance.opening))
        table.opening, first = 1, (spec.opening_speaker + 1) % n
    verdict = spec.judge.continue_label
    for round_index in range(spec.num_max_replies):
        for speaker in [(first + i) % n for i in range(n)]:
            if speaker == table_spec.questioner:
                turn = await questioner.message(table, speaker)
            else:
                turn = await sample_message(
                    table, table.turns, speaker, ("a", round_index, speaker)
                )
            table.turns.append(turn)
        final = round_index + 1 >= spec.num_max_replies
        judgement = await ask_judge(
            llm, spec, instance, table.turns, final=final, template=table.judge_template,
            temperature=judge.temperature,
            seed=stable_int("gtsteer-verdict-judge", instance.seed, game_seed, round_index),
        )
        verdict = judgement.verdict
        if verdict != spec.judge.continue_label:
            break
    player_type = table_spec.type_of(instance.private_info)
    returns = table_spec.payoffs(verdict, player_type)
    return GameOutcome(
        instance=instance.index,
        player_type=player_type,
        verdict=verdict,
        rounds=table.rounds_done(),
        returns=returns,
        win=returns[table_spec.questioner] >= table_spec.win_value(),
        transcript=table.turns,
    )
