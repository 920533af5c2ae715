"""Held-out CFR gain: the solved policy replayed on fresh LLM samples of the same positions.
A metric (beside `solvers.metrics`) that writes no file; `runs/solve.py` is its driver.
docs/SOLVE.md ("Held-out CFR gain") defines every number; docs/explanation/heldout.md says why.

The in-sample CFR gain is measured on the very samples CFR optimised over. Here the same
instance is built again with message sample i seeded as i + num_llm_seeds and the policy is
played there. Only the first mover's opening sees nothing sampled, so only it is replayed
exactly (`clean_gain`). Replayed by action history (`Replayed`) every later decision plays the
policy solved for another message: content-blind, so its loss is not selection on noise;
replays that read the fresh text (`readers`) are measured beside it. In a dealt game the
history replay mixes the policies of the deals the player cannot tell apart, else the solved
tree's words would hand it the deal. `versus` compares each player's fresh value with the
`greedy` and `uniform` baselines on the same samples (`others`: `any`, or the first mover on
its solved opening, without which a reply may have nothing to agree on); in a dealt game the
opening also meets greedy's with both continued alike (`_continuations`, docs/TENSION.md).

Only the branches the measured profiles reach are expanded (`_measured_profiles`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyspiel
from pydantic import BaseModel, Field

from gtsteer.binding import DialogueGame, DialogueState, expand_sync
from gtsteer.binding.spec import ANY, DomainSpec
from gtsteer.solvers.cfr import PolicyTable
from gtsteer.solvers.evaluate import (
    Indistinct,
    Replayed,
    Strategy,
    expected_returns,
    fixed,
    tabular,
    truncated,
    uniform,
)
from gtsteer.solvers.metrics import normalized

#: Actions the CFR average policy plays below this probability are not replayed (and their
#: branches not expanded); the value error is at most that mass times the payoff range.
SUPPORT_TOLERANCE = 1e-3


class DepthGain(BaseModel):
    """One decision depth's share of a player's fresh-sample gain: V(the policy at the player's
    decisions up to `depth`, `any` after) minus the same up to the depth before (others on
    `any`). A player's shares add up to its gain."""

    player: int
    depth: int  # messages sampled before the decision
    gain: float
    #: Nothing sampled precedes the decision, so the player's information state is the solved
    #: one word for word and its policy is replayed exactly: the clean estimate.
    exact: bool


class ReplayGain(BaseModel):
    """The fresh-sample CFR gain of one replay of the solved policy."""

    cfr_gain: float  # mean over players
    cfr_gain_normalized: float
    cfr_gain_per_player: list[float]
    by_depth: list[DepthGain]
    #: Decisions where the fresh information state was a solved one word for word (played
    #: from the table), was read (matched or predicted from its text), or had no counterpart
    #: (played `any`), as the replay counts them.
    verbatim: int = 0
    read: int = 0
    unmatched: int = 0


#: What the policy's fresh-sample value is compared with: the unguided instruction, the one a
#: person would give without a solver (the domain's `greedy` hook), and uniform over them.
BASELINES = ("any", "greedy", "uniform")
#: `VersusBaseline.replay` of the first mover's opening decision (replayed exactly).
OPENING = "opening"
#: `VersusBaseline.others`: what the players other than the compared one play.
OTHERS = ("any", "policy")


class VersusBaseline(BaseModel):
    """One player's fresh-sample value with the policy minus with a baseline, on the same
    fresh samples: the first mover at its opening decision (its later decisions on `any`),
    every other player at all its decisions by a text-reading replay. The other players play
    `any` (`others="any"`), or, for a player other than the first mover, the first mover
    plays its solved opening and every later decision `any` (`others="policy"`)."""

    player: int
    replay: str  # OPENING, or a reader's name
    baseline: str  # one of BASELINES
    others: str = "any"  # one of OTHERS; a continuation's name (a reader, `greedy`): see above
    policy_value: float
    baseline_value: float
    gain: float  # policy_value - baseline_value


class HeldOutGain(BaseModel):
    """`games/<i>.json` `heldout`: the CFR gain on fresh samples of the solved positions."""

    #: Message sample i of the held-out tree is seeded as sample i + sample_offset.
    sample_offset: int
    #: The history replay (content-blind after the first message; see the module docstring).
    cfr_gain: float  # mean over players, as the in-sample `values.cfr_gain`
    cfr_gain_normalized: float  # / the config's payoff range (`metrics.normalized`)
    cfr_gain_per_player: list[float]
    by_depth: list[DepthGain] = Field(default_factory=list)
    #: The clean estimate: the first mover's opening decision, replayed exactly (its later
    #: decisions and every other player on `any`), minus V(all `any`), for that player.
    clean_player: int = 0
    clean_gain: float = 0.0
    clean_gain_normalized: float = 0.0
    #: The same share on the solved tree (the samples CFR chose from): the opening decision's
    #: in-sample gain minus `clean_gain` is its selection on sampling noise, measured exactly.
    clean_gain_in_sample: float = 0.0
    #: The solved policy's in-sample gain per player and depth (the same decomposition).
    in_sample_by_depth: list[DepthGain] = Field(default_factory=list)
    #: Replays that read the fresh text, by name (`nearest`, `distilled`), measured on the
    #: same fresh tree.
    readers: dict[str, ReplayGain] = Field(default_factory=dict)
    #: The policy against each baseline (`BASELINES`; `greedy` where the domain has one).
    versus: list[VersusBaseline] = Field(default_factory=list)
    value_any: list[float]  # each player's value when all play `any`, on the fresh samples
    #: Decision positions where the history replay was asked to act. The solved tree lacks
    #: some of them (its dialogue ended earlier there): `borrowed` ones played the mean of the
    #: solved policies for the same instructions under the other samples; `unmatched` ones,
    #: with no such position at all, played `any`.
    decisions: int
    borrowed: int
    unmatched: int
    #: Decisions of a dealt game where the player's solved information states differed across
    #: deals it cannot tell apart (its replayed policy mixes them by their chance probability).
    pooled: int = 0
    support_tolerance: float
    new_calls: int  # LLM calls the held-out measurement cost this run (0 when cached)


#: Builds a replay that reads the fresh text from the solved game and its (truncated) policy;
#: it is called with the fresh tree's states.
ReaderFactory = Callable[[DialogueGame, PolicyTable], Strategy]


class HeldOutError(RuntimeError):
    """The held-out tree could not be expanded (a failed model call); the in-sample result
    of the instance is unaffected."""


def same_private_info(game: DialogueGame) -> Indistinct:
    """At the deal node, the deals that give the player the private information of the one
    dealt (an interrogator, who has none, cannot tell a guilty suspect's deal from an innocent
    one's); every other chance outcome is its own."""

    def indistinct(state: pyspiel.State, action: int, player: int) -> list[int]:
        if not state.is_deal_node():
            return [action]
        mine = game.deals[action].private_info[player]
        return [j for j, deal in enumerate(game.deals) if deal.private_info[player] == mine]

    return indistinct


def measure_heldout(
    solved: DialogueGame,
    table: PolicyTable,
    fresh: DialogueGame,
    *,
    readers: Mapping[str, ReaderFactory] | None = None,
    support_tolerance: float = SUPPORT_TOLERANCE,
    progress: bool = True,
) -> HeldOutGain:
    """CFR gain of `table` (computed on `solved`) replayed on `fresh`, the same instance
    built with a `sample_offset` (other LLM samples of the same positions): by action history,
    and by each of `readers` (replays that read the fresh text)."""
    if fresh.sample_offset == solved.sample_offset:
        raise ValueError("the held-out game must draw other samples: give it another sample_offset")
    n = fresh.num_players()
    any_actions = [fresh.any_action(p) for p in range(n)]
    baseline = fixed(any_actions)
    kept = truncated(table, support_tolerance)
    # Other message samples may stand in for a missing position; other deals may not (they
    # change what the player privately knows). Deals that give the player the same private
    # information are always mixed: it cannot tell them apart.
    history = Replayed(kept, solved, baseline,
                       resample=lambda state: not state.is_deal_node(),
                       indistinct=same_private_info(solved))
    replays: dict[str, Strategy] = {"history": history}
    for name, build in (readers or {}).items():
        if name in replays:
            raise ValueError(f"readers: {name!r} is taken (the history replay)")
        replays[name] = build(solved, kept)
    baselines = zip(BASELINES, (baseline, greedy_baseline(fresh), uniform()), strict=True)
    compared = {name: b for name, b in baselines if b is not None}
    before = fresh.llm.usage
    first = fresh.first_player
    opening = _up_to(history, baseline, 0)
    then = _continuations(fresh, replays, compared)
    profiles = [_up_to(o, c, 0) for c in then.values() for o in (opening, compared["greedy"])]
    follow = _measured_profiles(fresh, any_actions, [*replays.values(), *compared.values()],
                                opening, profiles)
    report = expand_sync(fresh, progress=progress, follow=follow)
    if report.failed:
        raise HeldOutError(f"held-out tree: {report.reason}")
    # Count only what the measurement itself asks of the policies (expansion asked more).
    for replay in replays.values():
        for kind in ("hits", "borrowed", "misses", "pooled", "verbatim", "read", "unmatched"):
            getattr(replay, kind, set()).clear()
    span = fresh.spec.payoff.span
    base = expected_returns(fresh, [baseline] * n)
    gains = {name: _replay_gain(fresh, replay, baseline, base, span)
             for name, replay in replays.items()}
    blind = gains.pop("history")
    own = _replay_gain(solved, tabular(table), baseline,
                       expected_returns(solved, [baseline] * n), span)
    clean = next(d.gain for d in blind.by_depth if d.player == first and d.exact)
    readers_only = {name: replays[name] for name in replays if name != "history"}
    versus = _versus(fresh, baseline, compared, history, readers_only, then)
    return HeldOutGain(
        sample_offset=fresh.sample_offset,
        cfr_gain=blind.cfr_gain,
        cfr_gain_normalized=blind.cfr_gain_normalized,
        cfr_gain_per_player=blind.cfr_gain_per_player,
        by_depth=blind.by_depth,
        clean_player=first,
        clean_gain=clean,
        clean_gain_normalized=normalized(clean, span),
        clean_gain_in_sample=next(d.gain for d in own.by_depth if d.player == first and d.exact),
        in_sample_by_depth=own.by_depth,
        readers=gains,
        versus=versus,
        value_any=[float(v) for v in base],
        decisions=len(history.hits | history.borrowed | history.misses),
        borrowed=len(history.borrowed),
        unmatched=len(history.misses),
        pooled=len(history.pooled),
        support_tolerance=support_tolerance,
        new_calls=fresh.llm.usage.since(before).new_calls,
    )


def _continuations(fresh: DialogueGame, replays: Mapping[str, Strategy],
                   compared: Mapping[str, Strategy]) -> dict[str, Strategy]:
    """What plays every decision after the opening in a dealt game's primary contrast: each
    text-reading replay and greedy (none without a greedy baseline, or undealt)."""
    if not fresh.dealt or "greedy" not in compared:
        return {}
    return {**{k: v for k, v in replays.items() if k != "history"}, "greedy": compared["greedy"]}


def _measured_profiles(fresh: DialogueGame, any_actions: list[int], strategies: list[Strategy],
                       opening: Strategy, profiles: Sequence[Strategy] = ()
                       ) -> Callable[[DialogueState], list[int]]:
    """The `follow` of the held-out expansion: only the part of the fresh tree that some
    measured profile reaches (`strategies`: the replays and the baselines compared; `opening`:
    the first mover's solved opening; `profiles`: strategies every player plays at once), so
    the measurement pays for no other branch."""
    n = fresh.num_players()
    first = fresh.first_player

    def support(state: pyspiel.State) -> set[int]:
        return {a for strategy in strategies for a, p in strategy(state) if p > 0.0}

    def follow(state: DialogueState) -> list[int]:
        """The actions some measured profile plays here: everyone `any` (the baseline), or
        one player i on a replay (up to some depth, `any` after) with the others on `any`,
        or (i not the first mover) with the first mover on its solved opening."""
        player = state.current_player()
        walk = fresh.new_initial_state()
        moves: list[list[tuple[pyspiel.State, int]]] = [[] for _ in range(n)]
        path: list[tuple[pyspiel.State, int]] = []
        for action in state.history():
            if not walk.is_chance_node():
                path.append((walk.clone(), action))
                moves[walk.current_player()].append(path[-1])
            walk.apply_action(action)
        on_any = [all(a == any_actions[p] for _, a in moves[p]) for p in range(n)]
        on_replay = [all(a == any_actions[p] or a in support(s) for s, a in moves[p])
                     for p in range(n)]
        on_opening = all(a in _played(opening, s) for s, a in moves[first])

        def deviation_reaches(i: int) -> bool:
            return on_replay[i] and all(on_any[p] for p in range(n) if p != i)

        def after_opening_reaches(i: int) -> bool:
            return (i != first and on_replay[i] and on_opening
                    and all(on_any[p] for p in range(n) if p not in (i, first)))

        def reaches(i: int) -> bool:
            return deviation_reaches(i) or after_opening_reaches(i)

        out = set()
        if all(on_any) or any(deviation_reaches(i) for i in range(n) if i != player):
            out.add(any_actions[player])
        if any(after_opening_reaches(i) for i in range(n) if i != player):
            out |= _played(opening, state) if player == first else {any_actions[player]}
        if reaches(player):
            out |= support(state) | {any_actions[player]}
        for joint in profiles:
            if all(a in _played(joint, s) for s, a in path):
                out |= _played(joint, state)
        return sorted(out)

    return follow


def greedy_instruction(spec: DomainSpec, info: dict[str, str],
                       messages: Sequence[str] = (), depth: int = 0) -> str | None:
    """The instruction the domain's greedy baseline gives a player whose private information is
    `info` at the message of `depth`, having read `messages` (the domain's `reply_greedy`
    after the first message where it has one, else `greedy`), among the keys that message may
    set (every other key `any`), as an action string of `spec`; None where the domain has no
    such hook or its choice names no action the message offers."""
    hooks = spec.hooks
    if messages and hooks.reply_greedy is not None:
        chosen = hooks.reply_greedy(spec, info, list(messages))
    elif hooks.greedy is not None:
        chosen = hooks.greedy(spec, info)
    else:
        return None
    keys = spec.turn_keys(depth)
    if not set(chosen) & set(keys):
        return None
    wanted = {k: chosen.get(k, ANY) if k in keys else ANY for k in spec.actions}
    return next((name for name in spec.instructions()
                 if spec.parse_instruction(name) == wanted), None)


def greedy_baseline(game: DialogueGame) -> Strategy | None:
    """The acting player's greedy instruction (`greedy_instruction`, from that player's own
    private information and the messages it has read), `any` where it names none the turn
    offers; None where the domain has no greedy hook or its opening names no action."""
    if game.domain.greedy is None:
        return None
    names, spec = game.instructions(), game.spec
    for deal in game.deals:
        if any(greedy_instruction(spec, info) is None for info in deal.private_info):
            return None
    picks: dict[tuple[int, int, tuple[str, ...]], int] = {}

    def strategy(state: pyspiel.State) -> list[tuple[int, float]]:
        player, read = state.current_player(), tuple(t.text for t in state.turns)
        key = (state.deal, player, read)
        if key not in picks:
            chosen = greedy_instruction(spec, game.deals[state.deal].private_info[player], read,
                                        state.replies)
            picks[key] = names.index(chosen) if chosen is not None else game.any_action()
        return [(picks[key], 1.0)]

    return strategy


def _versus(fresh: DialogueGame, baseline: Strategy, compared: Mapping[str, Strategy],
            history: Strategy, readers: Mapping[str, Strategy],
            then: Mapping[str, Strategy]) -> list[VersusBaseline]:
    """Each player's value with the policy minus with each baseline: the first mover at its
    opening decision only (exact), the others on `baseline` (`any`), and against greedy's
    opening with every later decision on each of `then` (`_continuations`); every other player
    at every decision by each text-reading replay, the others on `any` and then with the first
    mover on its solved opening."""
    n, first = fresh.num_players(), fresh.first_player
    opening = _up_to(history, baseline, 0)

    def joint(others: str) -> list[Strategy]:
        out = [baseline] * n
        if others == "policy":
            out[first] = opening
        return out

    out = []
    for player in range(n):
        if player == first:
            cases = [({OPENING: opening}, "any", {name: _up_to(b, baseline, 0)
                                                  for name, b in compared.items()})]
        else:
            cases = [(dict(readers), others, dict(compared)) for others in OTHERS]
        for sources, others, baselines in cases:
            out += paired_versus(fresh, player, sources, baselines, joint(others), others)
    for name, rest in then.items():
        out += paired_versus(fresh, first, {OPENING: _up_to(opening, rest, 0)},
                             {"greedy": _up_to(compared["greedy"], rest, 0)}, [rest] * n, name)
    return out


def paired_versus(game: pyspiel.Game, player: int, policies: Mapping[str, Strategy],
                  baselines: Mapping[str, Strategy], others: Sequence[Strategy],
                  others_name: str = "any") -> list[VersusBaseline]:
    """`player`'s value with each of `policies` minus with each of `baselines`, every other
    player p on `others[p]`, all on the one tree of `game`: a paired difference (the same
    samples on both sides, so a policy that plays a baseline's actions gains exactly 0).
    Game-agnostic: `measure_heldout` runs it on a dialogue tree, the Werewolf held-out driver
    on a playstyle game."""
    if len(others) != game.num_players():
        raise ValueError(f"others: need {game.num_players()} strategies, got {len(others)}")

    base_values = {name: value_of(game, player, b, others) for name, b in baselines.items()}
    out = []
    for replay, policy in policies.items():
        policy_value = value_of(game, player, policy, others)
        out += [VersusBaseline(player=player, replay=replay, baseline=name, others=others_name,
                               policy_value=policy_value, baseline_value=v,
                               gain=policy_value - v)
                for name, v in base_values.items()]
    return out


def value_of(game: pyspiel.Game, player: int, strategy: Strategy,
             others: Sequence[Strategy]) -> float:
    """`player`'s value playing `strategy`, every other player p on `others[p]`."""
    joint = list(others)
    joint[player] = strategy
    return float(expected_returns(game, joint)[player])


def _played(strategy: Strategy, state: pyspiel.State) -> set[int]:
    return {a for a, p in strategy(state) if p > 0.0}


def _up_to(replay: Strategy, baseline: Strategy, depth: int) -> Strategy:
    """`replay` at decisions after at most `depth` messages, `baseline` after."""

    def strategy(state: pyspiel.State) -> list[tuple[int, float]]:
        return replay(state) if state.replies <= depth else baseline(state)

    return strategy


def _replay_gain(game: DialogueGame, replay: Strategy, baseline: Strategy, base: np.ndarray,
                 span: float) -> ReplayGain:
    """Per player and decision depth, the gain of `replay` over `baseline` (others on it)."""
    n = game.num_players()
    per_player, by_depth = [], []
    for player in range(n):
        depths = [d for d in range(game.reply_limit) if (game.first_player + d) % n == player]
        value = float(base[player])
        start = value
        for depth in depths:
            joint = [baseline] * n
            joint[player] = _up_to(replay, baseline, depth)
            reached = float(expected_returns(game, joint)[player])
            by_depth.append(DepthGain(player=player, depth=depth, gain=reached - value,
                                      exact=depth == 0))
            value = reached
        per_player.append(value - start)
    gain = float(np.mean(per_player))
    return ReplayGain(
        cfr_gain=gain, cfr_gain_normalized=normalized(gain, span), cfr_gain_per_player=per_player,
        by_depth=by_depth,
        verbatim=len(getattr(replay, "verbatim", ())), read=len(getattr(replay, "read", ())),
        unmatched=len(getattr(replay, "unmatched", ())),
    )
