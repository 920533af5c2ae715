"""Expansion: every LLM request of the tree, level by level, concurrently, through the cache.

A solver then walks a tree whose messages, termination checks and rewards are all in memory
(and on disk), so CFR never waits on a model. A killed expansion restarts from the disk cache;
an instance whose reward cannot be obtained is marked failed instead of crashing a batch.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from gtsteer.binding.cost_profile import phase
from gtsteer.binding.game import DialogueGame, DialogueState
from gtsteer.binding.progress import GatherBar
from gtsteer.binding.prompts import Turn
from gtsteer.binding.reward import compute_reward
from gtsteer.llm import LLMError, run_sync


class ExpansionError(RuntimeError):
    """A tree a run cannot do without could not be expanded (every instance of a meta-game,
    a reference game): the message names the tree and why, e.g. the model's error. Where one
    instance among others fails, its run goes on and records the failure instead."""

    @classmethod
    def every_instance(cls, failures: dict[int, str]) -> ExpansionError:
        """No instance expanded; one reason shared by all (a server that is down) is said once."""
        reasons = sorted(set(failures.values()))
        which = ", ".join(str(i) for i in sorted(failures))
        if len(reasons) == 1:
            return cls(f"no instance expanded (instance {which}): {reasons[0]}")
        return cls("no instance expanded: " + "; ".join(
            f"instance {i}: {failures[i]}" for i in sorted(failures)))


class ExpansionReport(BaseModel):
    decision_nodes: int = 0
    chance_nodes: int = 0
    terminal_nodes: int = 0
    depth: int = 0
    message_requests: int = 0
    termination_requests: int = 0
    reward_requests: int = 0
    llm_requests: int = 0
    cache_hits: int = 0
    new_calls: int = 0
    failed: bool = False
    reason: str | None = None
    failed_terminals: int = 0
    clipped_rewards: int = 0
    #: Messages that repeated their instruction verbatim (the repeat was stripped).
    echoed_messages: int = 0
    #: Messages sent with an instruction other than `any` (the base of the echo rate).
    instructed_messages: int = 0
    wall_s: float = 0.0


def _first_failure(results: list[Any]) -> BaseException | None:
    for r in results:
        if isinstance(r, BaseException):
            if not isinstance(r, LLMError):
                raise r
            return r
    return None


async def expand(
    game: DialogueGame,
    progress: bool = True,
    follow: Callable[[DialogueState], list[int]] | None = None,
) -> ExpansionReport:
    """Fill `game`'s messages, termination checks and rewards; returns what it took.

    `follow(state)` names the actions to expand at a decision node (default: every legal one),
    so a caller that needs only part of the tree (PSRO's fixed-instruction profiles) pays for
    only that part."""
    start_time = time.perf_counter()
    before = game.llm.usage
    report = ExpansionReport()
    level: list[DialogueState] = [game.new_initial_state()]
    terminals: list[DialogueState] = []
    with GatherBar(progress) as bar:
        depth = 0
        while level:
            chance = [s for s in level if s.is_chance_node() and not s.is_deal_node()]
            # 1. every message of this level
            jobs = _message_jobs(game, chance)
            report.message_requests += len(jobs)
            with phase("messages", game.llm):
                results = await bar.gather(f"depth {depth}: messages", jobs,
                                           return_exceptions=True)
            if (err := _first_failure(results)) is not None:
                return _fail(game, report, f"message generation failed: {err}", before, start_time)
            # 2. the end check (termination prompt or judge) of every new message that gets one
            if game.has_end_check:
                jobs = _end_check_jobs(game, chance)
                report.termination_requests += len(jobs)
                with phase("end checks", game.llm):
                    results = await bar.gather(f"depth {depth}: end checks", jobs,
                                               return_exceptions=True)
                if (err := _first_failure(results)) is not None:
                    return _fail(game, report, f"termination check failed: {err}", before,
                                 start_time)
            # 3. the next level (all results are in memory now: no LLM call here)
            level = _next_level(level, follow, report, terminals)
            depth += 1
        report.depth = depth - 1
        # 4. one reward per terminal
        todo = [s for s in terminals if s.history_key not in game.rewards]
        report.reward_requests = len(todo)
        reward_jobs = []
        for s in todo:
            assert s.deal is not None, "terminals come after the deal node"
            reward_jobs.append(compute_reward(game.reward_context(s.history_key, s.turns, s.deal)))
        with phase("rewards", game.llm):
            results = await bar.gather("rewards", reward_jobs, return_exceptions=True)
    reasons = []
    for s, res in zip(todo, results, strict=True):
        if isinstance(res, BaseException):
            if not isinstance(res, LLMError):
                raise res
            report.failed_terminals += 1
            reasons.append(f"reward of terminal {list(s.history_key)} failed: {res}")
        else:
            game.rewards[s.history_key] = res
    report.clipped_rewards = sum(game.rewards[s.history_key].clipped for s in terminals
                                 if s.history_key in game.rewards)
    if reasons:
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return _fail(game, report, reasons[0] + more, before, start_time)
    game.failure = None
    return _finish(game, report, before, start_time)


def _message_jobs(game: DialogueGame, chance: list[DialogueState]) -> list[Awaitable[Any]]:
    """A request for every message below these chance nodes that the game does not hold yet."""
    jobs: list[Awaitable[Any]] = []
    for s in chance:
        speaker, instruction = s.current_speaker, s.pending_instruction
        assert instruction is not None and s.deal is not None, "past the deal node"
        for outcome, _ in s.chance_outcomes():
            h = (*s.history_key, outcome)
            if h not in game.messages:
                jobs.append(game.amessage(h, s.turns, speaker, instruction, s.deal))
    return jobs


def _end_check_jobs(game: DialogueGame, chance: list[DialogueState]) -> list[Awaitable[Any]]:
    """A request for the end check of every new message below these chance nodes that gets one
    (the game's termination prompt or judge), unless the game holds its answer already."""
    jobs: list[Awaitable[Any]] = []
    for s in chance:
        if not game.spec.end_check_after(s.replies + 1):
            continue
        for outcome, _ in s.chance_outcomes():
            h = (*s.history_key, outcome)
            if h in game.terminations:
                continue
            turn = Turn(speaker=s.current_speaker, instruction=s.pending_instruction,
                        text=game.messages[h])
            jobs.append(game.aterminated(h, [*s.turns, turn]))
    return jobs


def _next_level(level: list[DialogueState], follow: Callable[[DialogueState], list[int]] | None,
                report: ExpansionReport, terminals: list[DialogueState]) -> list[DialogueState]:
    """The states one step below `level` (decision nodes: the `follow`ed actions), counting its
    nodes in `report` and keeping its terminals in `terminals`."""
    nxt: list[DialogueState] = []
    for s in level:
        if s.is_terminal():
            report.terminal_nodes += 1
            terminals.append(s)
        elif s.is_chance_node():
            report.chance_nodes += 1
            nxt += [s.child(a) for a, _ in s.chance_outcomes()]
        else:
            report.decision_nodes += 1
            nxt += [s.child(a) for a in (follow(s) if follow else s.legal_actions())]
    return nxt


def _count_echoes(game: DialogueGame, report: ExpansionReport) -> None:
    any_action = game.any_action()
    report.echoed_messages = len(game.echoes)
    # A message history ends (..., instruction, sample): the instruction is its second-last action.
    report.instructed_messages = sum(1 for h in game.messages if h[-2] != any_action)


def _fail(game: DialogueGame, report: ExpansionReport, reason: str, before: Any,
          start_time: float) -> ExpansionReport:
    game.failure = reason
    report.failed, report.reason = True, reason
    return _finish(game, report, before, start_time)


def _finish(game: DialogueGame, report: ExpansionReport, before: Any,
            start_time: float) -> ExpansionReport:
    _count_echoes(game, report)
    calls = game.llm.usage.since(before)
    report.llm_requests, report.cache_hits = calls.requests, calls.cache_hits
    report.new_calls = calls.new_calls
    report.wall_s = round(time.perf_counter() - start_time, 3)
    return report


def expand_sync(
    game: DialogueGame,
    progress: bool = True,
    follow: Callable[[DialogueState], list[int]] | None = None,
) -> ExpansionReport:
    """`expand` from synchronous code."""
    return run_sync(expand(game, progress=progress, follow=follow))

