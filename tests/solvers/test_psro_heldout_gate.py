"""PSRO's held-out gate (baseline fixed in-sample, rejections recorded, no false convergence)
and the bargaining driver's stopping rule. Review 66ff82a M3 and L2.

Which samples are fresh is learnt from the run, not from the message-seed formula: the solved
games are expanded once while the backend records their seeds, so any other seed belongs to a
fresh sample (a message's seed never depends on the instruction, so a grown game reuses them).
"""

from __future__ import annotations

from typing import Literal

import pytest
from psro_helpers import STRENGTH, STRENGTH_CONFIG, CountingBackend, ScriptedProposer, llm_for

from gtsteer.binding import Domain, generate_instances, make_game
from gtsteer.domains import get_domain, load_spec, register_domain
from gtsteer.solvers.psro import PSROConfig, build_metagame, run_psro

LUCKY = "I feel lucky. "
BONUS = 4.0


class LuckySamples(CountingBackend):
    """Messages with a lucky line on the solved samples or on the fresh ones (`lucky`)."""

    def __init__(self, lucky: Literal["solved", "fresh"]) -> None:
        super().__init__()
        self.lucky = lucky
        self.solved: set[int] = set()
        self.recording = True

    async def complete(self, request, json_schema=None):
        out = await super().complete(request, json_schema)
        if self.recording:
            self.solved.add(request.seed)
        fresh = request.seed not in self.solved
        if fresh == (self.lucky == "fresh"):
            out = out.model_copy(update={"text": LUCKY + out.text})
        return out


def _bonus_for(instruction: str):
    """Strength payoffs, plus BONUS for player 0 playing `instruction` whose (first) message
    was lucky."""

    async def utility(ctx) -> list[float]:
        own = [STRENGTH.get(ctx.instructions(p)[0], 0.0) for p in range(2)]
        first = next(t for t in ctx.transcript if t.speaker == 0)
        bonus = BONUS if first.instruction == instruction and "lucky" in first.text else 0.0
        return [own[0] - 0.5 * own[1] + bonus, own[1] - 0.5 * own[0]]

    return utility


register_domain(Domain(name="test_psro_gate_calm_fresh", utility=_bonus_for("calm")))
register_domain(Domain(name="test_psro_gate_charm_solved", utility=_bonus_for("charm")))


def lucky_games(domain: str, lucky: Literal["solved", "fresh"]):
    spec = load_spec(STRENGTH_CONFIG)
    spec = spec.model_copy(update={"domain": domain}).with_domain(get_domain(domain))
    backend = LuckySamples(lucky)
    llm = llm_for(backend)
    games = [make_game(spec, inst, llm) for inst in generate_instances(spec, 1)]
    build_metagame(games, [spec.actions["stance"]] * 2)  # every solved message, recorded
    backend.recording = False
    return games, backend


def test_the_gates_baseline_is_the_instruction_best_in_sample_rescored_on_fresh_samples():
    # Before: the baseline was the best current instruction re-chosen on the fresh scores.
    # Here `calm` is worth BONUS more on fresh samples only, so it won the fresh comparison
    # and `bold`, better than the in-sample best `assertive` on both sets, was rejected.
    games, _ = lucky_games("test_psro_gate_calm_fresh", "fresh")
    proposer = ScriptedProposer({"proposer": [["bold"]], "responder": [[""]]})
    config = PSROConfig(iterations=1, candidates=1, heldout=True, heldout_gate=True)
    result = run_psro(games, llm_for(proposer), config)
    first = result.iterations[0]
    assert first.added == ["bold", None] and "bold" in result.final_populations[0]
    oracle = first.oracles[0]
    # in-sample the best current instruction against RD's (assertive) responder is assertive
    responder = [c for c, v in first.solutions["rd"].marginals[1].items() if v > 1e-4]
    assert responder == ["assertive"]
    current = {x: STRENGTH[x] - 0.5 * STRENGTH["assertive"]
               for x in first.populations[0]}
    best = max(current, key=current.__getitem__)
    assert oracle.best_current_instruction == best == "assertive"
    assert oracle.best_current == pytest.approx(current[best], abs=1e-3)
    check = oracle.heldout
    assert check is not None and check.baseline_instruction == best
    assert check.baseline_in_sample == pytest.approx(oracle.best_current, abs=1e-12)
    assert check.candidate_in_sample == oracle.candidates[0].score
    # the fresh samples do make calm the best current instruction there ...
    fresh = [make_game(g.spec, g.instance, g.llm, sample_offset=g.spec.num_llm_seeds)
             for g in games]
    mg, _ = build_metagame(fresh, [["calm", best], ["assertive"]])
    calm_fresh, best_fresh = mg.mean[0][:, 0]
    assert calm_fresh - best_fresh == pytest.approx(
        STRENGTH["calm"] + BONUS - STRENGTH[best], abs=1e-9)
    assert calm_fresh > check.candidate
    # ... but the baseline stays the in-sample choice, re-scored: bold beats it and is added
    assert check.baseline == pytest.approx(best_fresh, abs=1e-3)
    assert check.holds and oracle.rejected is None and first.rejected == [None, None]


def test_a_gated_out_proposal_is_recorded_as_rejected_and_is_no_convergence():
    # Before: a rejection left `added` null like "nothing found", so iteration 0 reported
    # converged and the run stopped there although the in-sample oracle had improved.
    games, _ = lucky_games("test_psro_gate_charm_solved", "solved")
    proposer = ScriptedProposer({"proposer": [["charm"]], "responder": [[""]]})
    config = PSROConfig(iterations=2, candidates=1, heldout=True, heldout_gate=True)
    result = run_psro(games, llm_for(proposer), config)
    first = result.iterations[0]
    assert not first.converged and len(result.iterations) == 3 and not result.converged
    oracle = first.oracles[0]
    check = oracle.heldout
    assert check is not None and not check.holds
    # the in-sample oracle found an improvement; fresh samples did not confirm it
    assert check.candidate_in_sample > check.baseline_in_sample + 1.0
    assert check.candidate < check.baseline
    assert check.baseline_instruction == oracle.best_current_instruction
    assert oracle.rejected == "charm" and oracle.added is None
    assert first.rejected == ["charm", None] and first.added == [None, None]
    assert "fresh samples" in (oracle.reason or "")
    assert "charm" not in result.final_populations[0]
    assert first.gap <= first.gap_limit  # the gap test alone would have stopped the run
    # the responder's oracle found nothing: not rejected, and no scores to gate on
    assert first.oracles[1].rejected is None and first.oracles[1].heldout is None


def test_a_bargaining_driven_run_converges_when_nothing_is_added():
    # Before: an nbs run's gap is the NBS's CCE gap, positive however long it runs, so it
    # never converged. Prisoner's dilemma (calm cooperates, every other stance defects): the
    # NBS from (any, any) = (1, 1) is (calm, calm), CCE gap 2 + 2; a defecting proposal pays
    # what assertive pays against it, so nothing is added.
    spec = load_spec(STRENGTH_CONFIG)
    spec = spec.model_copy(update={"domain": "test_psro_gate_dilemma"}).with_domain(
        get_domain("test_psro_gate_dilemma"))
    games = [make_game(spec, inst, llm_for(CountingBackend()))
             for inst in generate_instances(spec, 1)]
    proposer = ScriptedProposer({"proposer": [["timid"]], "responder": [["bold"]]})
    result = run_psro(games, llm_for(proposer),
                      PSROConfig(iterations=3, candidates=1, meta_solver="nbs"))
    first = result.iterations[0]
    assert result.converged and len(result.iterations) == 1
    nbs = first.solutions["nbs"]
    assert nbs.joint[0][0] == pytest.approx(1.0, abs=1e-6)  # (calm, calm)
    assert first.gap == pytest.approx(4.0, abs=1e-6) and first.gap > first.gap_limit
    assert first.stop_rule == "nothing_added" and first.added == [None, None] and first.converged
    # driven by an equilibrium concept the gap test stays: RD's (assertive, assertive) has
    # NashConv ~0 and the run converges on it
    rd = run_psro(games, llm_for(proposer), PSROConfig(iterations=3, candidates=1))
    assert rd.iterations[0].stop_rule == "gap" and rd.converged


async def _dilemma(ctx) -> list[float]:
    cooperate = [ctx.instructions(p)[0] == "calm" for p in range(2)]
    table = {(True, True): [3.0, 3.0], (True, False): [0.0, 5.0],
             (False, True): [5.0, 0.0], (False, False): [1.0, 1.0]}
    return table[cooperate[0], cooperate[1]]


register_domain(Domain(name="test_psro_gate_dilemma", utility=_dilemma))
