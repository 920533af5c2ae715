"""`gtsteer export --format efg`: the .efg text, its side file, and the round trip through
OpenSpiel's own `efg_game` loader (NashConv and CFR+ values equal gtsteer's)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pyspiel
import pytest
from efg_helpers import CONFIGS, constant_llm, solve_and_export
from solve_helpers import MIXED_2X2, small_meeting
from typer.testing import CliRunner

import gtsteer
from gtsteer.cli import app
from gtsteer.solvers.cfr import policy_table, solve_cfr
from gtsteer.solvers.efg import policy_from_efg, policy_to_efg, to_efg
from gtsteer.solvers.gambit_text import label, number, probability
from gtsteer.solvers.metrics import nash_conv

#: Equal up to float summation order; CFR+ on both games does the same arithmetic.
TOL = 1e-9


def load_text(text: str, tmp_path: Path, name: str = "g.efg") -> pyspiel.Game:
    path = tmp_path / name
    path.write_text(text)
    return pyspiel.load_game("efg_game", {"filename": str(path)})


# ---- numbers and labels ---------------------------------------------------------------------


@pytest.mark.parametrize("x", [0.1, -2.5, 1e-05, 0.30000000000000004, 123456789.125, -1e-12])
def test_a_payoff_is_written_positionally_and_reads_back_as_the_same_float(x: float):
    text = number(x)
    assert "e" not in text.lower()
    assert float(text) == x
    assert Fraction(text) == Fraction(repr(x))  # Gambit's exact reading of the decimal


def test_integers_and_negative_zero_are_written_plainly():
    assert (number(3.0), number(-0.0), number(-7.0)) == ("3", "0", "-7")
    with pytest.raises(ValueError, match="finite"):
        number(float("nan"))


def test_a_probability_is_a_small_fraction_when_one_equals_the_float():
    assert (probability(1 / 3), probability(0.5), probability(1.0)) == ("1/3", "1/2", "1")
    assert probability(0.123456789123) == "0.123456789123"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        probability(1.5)


def test_a_label_has_no_quote_backslash_or_line_break_that_a_parser_would_misread():
    assert label('say "no"\\ \n\tnow') == "\"say 'no'/ now\""


# ---- a standard game ------------------------------------------------------------------------


def test_kuhn_poker_round_trips_through_efg_game_with_equal_values(tmp_path: Path):
    kuhn = pyspiel.load_game("kuhn_poker")
    export = to_efg(kuhn, title="Kuhn poker")
    loaded = load_text(export.text, tmp_path)
    assert loaded.num_players() == 2
    # 6 deals x 2 orders of the 3 decision levels: 6 + 6 + 6 ... as in OpenSpiel's kuhn file
    assert [sum(s.player == p for s in export.map.infosets) for p in (0, 1)] == [6, 6]
    assert (export.map.terminals, export.map.chance_nodes) == (30, 4)
    kuhn_cfr = solve_cfr(kuhn, solver="cfr+", iterations=200)
    efg_cfr = solve_cfr(loaded, solver="cfr+", iterations=200)
    assert nash_conv(loaded, efg_cfr.policy) == pytest.approx(
        nash_conv(kuhn_cfr.game, kuhn_cfr.policy), abs=TOL)
    mapped = policy_to_efg(loaded, export.map, kuhn_cfr.policy)
    assert nash_conv(loaded, mapped) == pytest.approx(nash_conv(kuhn_cfr.game, kuhn_cfr.policy),
                                                      abs=TOL)
    back = policy_from_efg(loaded, export.map, efg_cfr.policy)
    for key, probs in back.items():
        assert dict(probs) == pytest.approx(dict(kuhn_cfr.policy[key]), abs=TOL)


def test_reduced_strategies_of_kuhn_poker_are_the_known_counts():
    # Kuhn: player 1 has 3 cards x (bet | check then call/fold) = 3 choices per card -> 27;
    # player 2 has 6 information sets of 2 actions -> 64.
    assert to_efg(pyspiel.load_game("kuhn_poker")).map.reduced_strategies == ["27", "64"]


def test_a_simultaneous_move_game_is_refused():
    game = pyspiel.load_game("matrix_rps")  # simultaneous: no .efg form
    with pytest.raises(ValueError, match="simultaneous"):
        to_efg(game)


# ---- dialogue games -------------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_every_config_round_trips_nash_conv_and_cfr_plus_through_efg_game(
        config: Path, tmp_path: Path):
    done = solve_and_export(config, tmp_path)
    assert done.export.llm_calls.new_calls == 0  # the solve's calls, all from the cache
    assert done.export.llm_calls.requests > 0
    loaded = done.load()
    values = done.record["values"]
    # gtsteer's CFR policy, mapped through the side file: OpenSpiel's NashConv on the file
    mapped = policy_to_efg(loaded, done.efg_map, done.policy())
    assert nash_conv(loaded, mapped) == pytest.approx(values["nash_conv"], abs=TOL)
    # OpenSpiel CFR+ on the file, same iterations: the same NashConv and the same policy
    efg_cfr = solve_cfr(loaded, solver="cfr+", iterations=done.solve.iterations,
                        allow_python_fallback=False)
    assert nash_conv(loaded, efg_cfr.policy) == pytest.approx(values["nash_conv"], abs=TOL)
    back = policy_from_efg(loaded, done.efg_map, efg_cfr.policy)
    mine = done.policy()
    assert set(back) == set(mine)
    for key, probs in back.items():
        assert dict(probs) == pytest.approx(dict(mine[key]), abs=TOL)
    # every information state of gtsteer's policy is one numbered set of the file
    assert len(done.efg_map.infosets) == done.record["info_states"]
    assert sum(done.export.games[0].infosets) == done.record["info_states"]


def test_the_file_holds_the_trees_payoffs_and_chance_probabilities(tmp_path: Path):
    done = solve_and_export(MIXED_2X2, tmp_path, constant_llm(), iterations=50)
    text = done.efg_path.read_text()
    head = text.splitlines()[0]
    assert head.startswith('EFG 2 R "mixed_2x2, instance 0" { "proposer" "responder" }')
    # 3 instructions x 2 samples for each player: 36 terminals, 3 + 18 chance nodes
    assert (done.efg_map.terminals, done.efg_map.chance_nodes) == (36, 21)
    assert text.count(' "sample 0" 1/2 "sample 1" 1/2 ') == done.efg_map.chance_nodes
    # the responder cannot tell the proposer's instruction: one information set per sample
    # history it sees (the constant text), so 1 for each player here
    assert [s.label for s in done.efg_map.infosets] == ["proposer 1", "responder 1"]
    assert [a.label for a in done.efg_map.infosets[0].actions] == ["a", "b", "any"]
    loaded = done.load()
    assert loaded.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    # terminal payoffs: the file's tree and the game's tree give every profile the same value
    for row in ("a", "b", "any"):
        for col in ("a", "b", "any"):
            table = {s.info_state: [(next(a.action for a in s.actions if a.label == pick), 1.0)]
                     for s, pick in zip(done.efg_map.infosets, (row, col), strict=True)}
            mapped = policy_to_efg(loaded, done.efg_map, table)
            value = pyspiel.expected_returns(loaded.new_initial_state(),
                                             _tabular(mapped), -1, False)
            assert value[0] == pytest.approx(_payoff(row, col), abs=1e-12)


def _tabular(table):
    from gtsteer.solvers.cfr import to_pyspiel_policy

    return to_pyspiel_policy(table)


def _payoff(row: str, col: str) -> float:
    from solve_helpers import MOVES, PAYOFF

    return PAYOFF[MOVES.index(row)][MOVES.index(col)]


def test_a_dealt_game_exports_its_deal_node_and_keeps_the_side_file_exact(tmp_path: Path):
    config = next(c for c in CONFIGS if c.stem == "schedule_meeting_tone")
    done = solve_and_export(config, tmp_path, deals=2, iterations=300)
    assert done.export.num_deals == 2
    first_chance = next(line for line in done.efg_path.read_text().splitlines()
                        if line.lstrip().startswith("c "))
    assert '"deal 0" 1/2 "deal 1" 1/2' in first_chance
    loaded = done.load()
    mapped = policy_to_efg(loaded, done.efg_map, done.policy())
    assert nash_conv(loaded, mapped) == pytest.approx(done.record["values"]["nash_conv"],
                                                      abs=TOL)


def test_the_side_file_names_each_set_by_openspiels_information_state_string(tmp_path: Path):
    done = solve_and_export(MIXED_2X2, tmp_path, constant_llm(), iterations=10)
    loaded = done.load()
    seen = set(policy_table(loaded, lambda s: [(a, 0.0) for a in s.legal_actions()]))
    assert seen == {s.efg_info_state for s in done.efg_map.infosets}
    assert {s.efg_info_state for s in done.efg_map.infosets} == {
        "0-0-1-proposer 1", "1-1-1-responder 1"}


def test_export_refuses_an_unknown_format_before_any_work(tmp_path: Path):
    with pytest.raises(ValueError, match="format: expected one of efg"):
        gtsteer.export(MIXED_2X2, llm="fake", format="gbt", out=tmp_path / "o", quiet=True)
    assert not (tmp_path / "o").exists()


def test_the_export_command_writes_efg_side_file_and_summary(tmp_path: Path):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["export", str(MIXED_2X2), "--format", "efg", "--llm",
                                      "fake", "--games", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "export.json").read_text())
    assert [g["efg"] for g in summary["games"]] == ["games/0.efg", "games/1.efg"]
    assert summary["format"] == "efg" and summary["model"] == "fake"
    assert "games/1.efg" in "".join(result.output.split())  # a long path wraps at 80 columns
    for i in (0, 1):
        assert (out / "games" / f"{i}.efg").read_text().startswith("EFG 2 R ")
        side = json.loads((out / "games" / f"{i}.efg.json").read_text())
        assert side["infosets"][0]["efg_info_state"] == "0-0-1-proposer 1"
    again = CliRunner().invoke(app, ["export", str(MIXED_2X2), "--llm", "fake", "--games", "2",
                                     "--out", str(out)])
    assert again.exit_code == 0 and "0 new calls" in again.output


@pytest.mark.slow
def test_a_meeting_instance_with_the_embedded_model_round_trips_and_exports_for_free(
        tmp_path: Path):
    # The README job's domain on the embedded model (three days, one sample: the whole README
    # instance took 5 minutes of CI), solved, then exported from the cache
    done = solve_and_export(small_meeting(tmp_path), tmp_path, llm=None)
    assert done.solve.model.startswith("local") and done.export.model == done.solve.model
    assert done.solve.llm_calls.requests > 0
    assert done.export.llm_calls.new_calls == 0
    loaded = done.load()
    values = done.record["values"]
    mapped = policy_to_efg(loaded, done.efg_map, done.policy())
    assert nash_conv(loaded, mapped) == pytest.approx(values["nash_conv"], abs=TOL)
    efg_cfr = solve_cfr(loaded, solver="cfr+", iterations=done.solve.iterations,
                        allow_python_fallback=False)
    assert nash_conv(loaded, efg_cfr.policy) == pytest.approx(values["nash_conv"], abs=TOL)


def test_an_instance_that_fails_to_expand_is_recorded_and_the_others_are_written(
        tmp_path: Path):
    import yaml

    data = yaml.safe_load(MIXED_2X2.read_text())
    data["params"] = {"fail_instances": [1]}  # its reward model raises (tests/solve_helpers)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data))
    summary = gtsteer.export(spec, llm="fake", games=2, out=tmp_path / "o", quiet=True)
    assert [g.status for g in summary.games] == ["exported", "failed"]
    assert "reward model unavailable" in (summary.games[1].failure or "")
    assert (tmp_path / "o" / "games" / "0.efg").exists()
    assert not (tmp_path / "o" / "games" / "1.efg").exists()
