"""Gambit (pygambit, the test extra) reads gtsteer's files and checks its equilibria: the
exported .efg's regret of gtsteer's CFR+ policy against gtsteer's NashConv, Gambit's exact
equilibria against gtsteer's values, and PSRO's meta-game .nfg against its payoffs."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import numpy as np
import pygambit as gbt
import pytest
from efg_helpers import CONFIGS, constant_llm, solve_and_export
from solve_helpers import MIXED_2X2
from typer.testing import CliRunner

from gtsteer.cli import app
from gtsteer.solvers.nfg import to_nfg

TOL = 1e-9


def gambit_check() -> ModuleType:
    """The module behind `python -m lab gambit-check`."""
    from lab.studies import gambit_check

    return gambit_check


#: Information sets (both players) up to which the test also asks Gambit for an exact
#: equilibrium: its 2-player LCP takes 13 s on turing_test (59 sets) and 2 min on
#: interrogation (79); python -m lab gambit-check runs those (docs/SOLVE.md).
EQUILIBRIUM_INFOSETS = 40
#: Past this many information sets the regret check is skipped (time, not correctness).
REGRET_INFOSETS = 200


def test_gambit_finds_the_known_equilibrium_value_of_the_mixed_2x2_game_exactly(tmp_path: Path):
    # tests/data/mixed_2x2.yaml: the unique equilibrium mixes a/b as (1/3, 2/3) vs (2/3, 1/3)
    # for a value of exactly 2/3 to the proposer.
    done = solve_and_export(MIXED_2X2, tmp_path, constant_llm(), iterations=3000)
    result = gambit_check().check(done.efg_path, done.efg_map, done.policy())
    assert result.equilibrium_payoffs == [Fraction(2, 3), Fraction(-2, 3)]
    assert result.equilibrium_values == pytest.approx([2 / 3, -2 / 3], abs=1e-12)
    assert result.equilibrium_nash_conv == pytest.approx(0.0, abs=TOL)
    values = done.record["values"]
    assert result.nash_conv == pytest.approx(values["nash_conv"], abs=TOL)
    assert result.nash_conv_strategic == pytest.approx(values["nash_conv"], abs=TOL)
    assert abs(values["value_cfr"][0] - 2 / 3) <= values["nash_conv"] + TOL
    game = gbt.read_efg(str(done.efg_path))
    assert [len(p.strategies) for p in game.players] == [
        int(n) for n in done.efg_map.reduced_strategies]


def test_gambits_best_responses_see_a_policy_off_equilibrium_as_openspiel_does(tmp_path: Path):
    # "always a" for both, far from the equilibrium: the regrets are not 0 and must agree
    done = solve_and_export(MIXED_2X2, tmp_path, constant_llm(), iterations=10)
    pure = {s.info_state: [(a.action, 1.0 if a.label == "a" else 0.0) for a in s.actions]
            for s in done.efg_map.infosets}
    checker = gambit_check()
    result = checker.check(done.efg_path, done.efg_map, pure, equilibrium=False)
    gains = checker.openspiel_gains(done.efg_path, done.efg_map, pure)
    # proposer: a vs a pays 0, b vs a pays 1 (regret 1); responder: against a, its a pays 0,
    # b -2 and any -3 (regret 0)
    assert result.regrets == pytest.approx([1.0, 0.0], abs=1e-12)
    assert result.regrets == pytest.approx(gains, abs=1e-12)


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_gambits_regret_and_exact_equilibrium_agree_with_gtsteer(config: Path, tmp_path: Path):
    checker = gambit_check()
    done = solve_and_export(config, tmp_path)
    if len(done.efg_map.infosets) > REGRET_INFOSETS:
        pytest.skip(f"{len(done.efg_map.infosets)} information sets: Gambit's sequence-form best"
                    f" responses ran over 25 minutes on the tension game's 449 (the largest"
                    f" checked is interrogation's 94)")
    zero_sum = done.load().get_type().utility.name == "ZERO_SUM"
    small = len(done.efg_map.infosets) <= EQUILIBRIUM_INFOSETS
    result = checker.check(done.efg_path, done.efg_map, done.policy(), rational=False,
                           equilibrium=small)
    values = done.record["values"]
    # Gambit's best responses give gtsteer's (OpenSpiel's) NashConv, player by player
    assert result.nash_conv == pytest.approx(values["nash_conv"], abs=TOL)
    gains = checker.openspiel_gains(done.efg_path, done.efg_map, done.policy())
    assert result.regrets == pytest.approx(gains, abs=TOL)
    if not small:
        return
    # Gambit's exact equilibrium is one for OpenSpiel too, with the payoffs Gambit says
    assert result.equilibrium_nash_conv == pytest.approx(0.0, abs=TOL)
    assert result.equilibrium_values == pytest.approx(
        [float(x) for x in result.equilibrium_payoffs], abs=TOL)
    if zero_sum:  # the value is unique: CFR+ is within its NashConv of it
        assert abs(float(result.equilibrium_payoffs[0]) - values["value_cfr"][0]) <= (
            values["nash_conv"] + TOL)


def test_to_nfg_is_read_by_gambit_with_every_payoff_in_its_place(tmp_path: Path):
    rng = np.random.default_rng(0)
    stack = rng.normal(size=(2, 2, 3)).round(6)
    path = tmp_path / "m.nfg"
    path.write_text(to_nfg(stack, [["x", "y"], ["p", "q", 'say "r"']], title="t",
                           players=["row", "col"]))
    game = gbt.read_nfg(str(path))
    assert [p.label for p in game.players] == ["row", "col"]
    assert [s.label for s in list(game.players)[1].strategies] == ["p", "q", "say 'r'"]
    for p, arr in enumerate(game.to_arrays(dtype=float)):
        assert arr == pytest.approx(stack[p], abs=1e-12)


def test_psro_export_nfg_writes_each_meta_game_as_gambit_reads_it(tmp_path: Path):
    out = tmp_path / "psro"
    result = CliRunner().invoke(app, ["psro", "trade_fruit_tone", "--llm", "fake",
                                      "--iterations", "1", "--candidates", "2", "--out",
                                      str(out), "--quiet", "--export-nfg", "--report-nash"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    for it in summary["iterations"]:
        game = gbt.read_nfg(str(out / "iterations" / f"{it['iteration']}.nfg"))
        mg = it["metagame"]
        assert [[s.label for s in p.strategies] for p in game.players] == mg["labels"]
        for p, arr in enumerate(game.to_arrays(dtype=float)):
            assert arr == pytest.approx(np.asarray(mg["mean"][p]), abs=1e-12)
        # The run's `nash` is the maximum-welfare equilibrium; welfare is linear, so its
        # maximum is at an extreme equilibrium, and Gambit enumerates all of those.
        welfare = max(sum(float(e.payoff(pl)) for pl in game.players)
                      for e in gbt.nash.enummixed_solve(game, rational=True).equilibria)
        assert welfare == pytest.approx(sum(it["solutions"]["nash"]["payoffs"]), abs=1e-6)
