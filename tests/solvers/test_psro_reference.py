"""PSRO measured in the full game it has to discover (issue 40, item 2): each iteration's
meta-strategy is played in a reference config with every instruction, on one instances file.

The strength domain pays payoff_i = strength(own) - 0.5 strength(other), so in the full game
(calm 0, assertive 1, submissive -1, bold 2) every player's best response is `bold`: the best
gain over `any` is 2, and a meta-strategy on instruction s has NashConv 2 x (2 - s) and gain s.
The full game's CFR gain is lower, (2 + 0.4) / 2: the equilibrium opens `bold`, so after an
`any` opening the responder's states carry no counterfactual weight and CFR leaves them
uniform (0.4 = the mean strength). The run starts from `calm` and `any` and the scripted
proposer names `assertive`, then `bold`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from binding_support import write_instances
from psro_helpers import STRENGTH_CONFIG, CountingBackend, ScriptedProposer, llm_for

import gtsteer
from gtsteer.binding import generate_instances
from gtsteer.domains import load_spec
from gtsteer.solvers.psro import PSROConfig


def strength_config(tmp_path: Path, name: str, stances: list[str], **changes) -> Path:
    data = yaml.safe_load(STRENGTH_CONFIG.read_text())
    data.update(name=name, actions={"stance": stances}, **changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(tmp_path: Path, proposals: list[list[str]], **kwargs):
    start = strength_config(tmp_path, "strength_start", ["calm", "any"])
    full = strength_config(tmp_path, "strength_full",
                           ["calm", "assertive", "submissive", "bold", "any"])
    instances = tmp_path / "instances.jsonl"
    write_instances(generate_instances(load_spec(full), 2, 0), instances)
    proposer = ScriptedProposer({"proposer": proposals, "responder": proposals})
    settings = PSROConfig(iterations=len(proposals), candidates=1, heldout=True)
    summary = gtsteer.psro(start, llm=llm_for(CountingBackend()), proposer_llm=llm_for(proposer),
                           settings=settings, out=tmp_path / "run", instances=instances,
                           reference=full, **kwargs)
    return summary, instances, full


def test_each_iterations_meta_strategy_is_measured_in_the_full_game(tmp_path: Path) -> None:
    summary, instances, full = run(tmp_path, [["assertive"], ["bold"]])
    assert summary.instances_file == str(instances) and summary.reference == str(full)
    wanted = [json.loads(line)["index"] for line in instances.read_text().splitlines()]
    refs = [it.reference for it in summary.iterations]
    assert all(r is not None and r.concept == "rd" for r in refs)
    assert [p.instance for p in refs[0].per_instance] == wanted
    for ref, strength in zip(refs, (0.0, 1.0, 2.0), strict=True):
        assert ref.unmapped == []
        assert ref.best_gain == pytest.approx(2.0, abs=1e-9)
        assert ref.cfr_gain == pytest.approx(1.2, abs=1e-3)
        assert ref.nash_conv == pytest.approx(2 * (2.0 - strength), abs=1e-3)
        assert ref.gain == pytest.approx(strength, abs=1e-3)
        assert ref.best_share == pytest.approx(strength / 2.0, abs=1e-3)
        assert ref.cfr_share == pytest.approx(strength / 1.2, abs=1e-3)
        # The payoff reads instructions only, so fresh samples give the same gain.
        assert ref.fresh_gain == pytest.approx(strength, abs=1e-3)
    assert refs[2].played[0] == pytest.approx({"bold": 1.0}, abs=1e-3)
    written = json.loads((tmp_path / "run" / "iterations" / "2.json").read_text())
    assert written["reference"]["nash_conv"] == pytest.approx(0.0, abs=1e-3)


def test_an_instruction_the_full_game_lacks_is_named_not_measured(tmp_path: Path) -> None:
    summary, _, _ = run(tmp_path, [["fierce"]])
    last = summary.iterations[-1].reference
    assert last is not None and last.unmapped == ["fierce"]
    assert last.nash_conv is None and last.per_instance == []


def test_a_reference_of_another_game_is_refused_before_any_call(tmp_path: Path) -> None:
    start = strength_config(tmp_path, "strength_start", ["calm", "any"])
    other = strength_config(tmp_path, "strength_other", ["calm", "any"],
                            players=["proposer", "responder", "judge"])
    backend = CountingBackend()
    with pytest.raises(ValueError, match="players"):
        gtsteer.psro(start, llm=llm_for(backend), proposer_llm=llm_for(backend),
                     out=tmp_path / "run", reference=other)
    assert backend.calls == 0


def test_the_cli_takes_an_instances_file_and_a_reference(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gtsteer.cli import app

    start = strength_config(tmp_path, "strength_start", ["calm", "any"])
    full = strength_config(tmp_path, "strength_full", ["calm", "assertive", "bold", "any"])
    instances = tmp_path / "instances.jsonl"
    write_instances(generate_instances(load_spec(full), 2, 5), instances)
    args = ["psro", str(start), "--llm", "fake", "-t", "1", "-k", "1",
            "--instances", str(instances), "--reference", str(full), "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "meta-strategy in" in result.output and "NashConv" in result.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["num_games"] == 2 and summary["reference"] == str(full)
    first = summary["iterations"][0]["reference"]
    # calm and any are worth 0 and every player's best response in the full game is bold.
    assert first["nash_conv"] == pytest.approx(4.0, abs=1e-3)
    both = CliRunner().invoke(app, [*args, "--games", "3"])
    assert both.exit_code != 0 and "--instances" in both.output


def test_the_seeded_instances_file_holds_what_solve_generates(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gtsteer.binding.llm_instances import read_instances
    from gtsteer.cli import app

    full = strength_config(tmp_path, "strength_full", ["calm", "assertive", "bold", "any"])
    out = tmp_path / "seeded.jsonl"
    result = CliRunner().invoke(app, ["instances", str(full), "--seeded", "-n", "3", "-s", "4",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert read_instances(out) == generate_instances(load_spec(full), 3, 4)


def test_a_label_in_other_words_is_measured_as_the_full_games_instruction(
        tmp_path: Path) -> None:
    # A proposer's "Bold." or "BOLD" is the full game's `bold` (issue 57; review L5: matched
    # exactly, a correct "tuesday" was "unmapped" and gave no numbers).
    from gtsteer.llm import LLM
    from gtsteer.runs.psro import _reference_games
    from gtsteer.solvers.psro.reference import measure_in_reference

    full = strength_config(tmp_path, "strength_full",
                           ["calm", "assertive", "submissive", "bold", "any"])
    spec = load_spec(full)
    refs = _reference_games(spec, generate_instances(spec, 2, 0), LLM("fake"), "",
                            PSROConfig(), None)
    report = measure_in_reference(refs, [{"Bold.": 0.5, "BOLD": 0.5}, {"Any": 1.0}], "rd")
    assert report.unmapped == []
    assert report.renamed == {"Bold.": "bold", "BOLD": "bold", "Any": "any"}
    assert report.played == [{"bold": 1.0}, {"any": 1.0}]
    # the proposer on bold gains 2, the responder on any 0: the mean over players
    assert report.gain == pytest.approx(1.0, abs=1e-9)
    assert measure_in_reference(refs, [{"bolder": 1.0}, {"any": 1.0}], "rd").unmapped == [
        "bolder"]


def test_the_best_constant_mixture_is_the_instruction_with_the_best_mean_gain(
        tmp_path: Path) -> None:
    # Issue 57 item 3: the bar for PSRO is one mixture for every instance, not per-instance
    # CFR. In the strength game a player's gain over `any` on instruction s is s whatever the
    # instance, so the best constant mixture is `bold` for both players, gaining 2 in-sample
    # and on fresh samples, and an equilibrium of the full game (NashConv 0).
    summary, _, _ = run(tmp_path, [["assertive"]])
    best = summary.constant_reference
    assert best is not None and best.played == ["bold", "bold"]
    assert best.gains[0] == pytest.approx(
        {"calm": 0.0, "assertive": 1.0, "submissive": -1.0, "bold": 2.0, "any": 0.0}, abs=1e-9)
    assert best.gain == pytest.approx(2.0) and best.fresh_gain == pytest.approx(2.0)
    assert [p.nash_conv for p in best.per_instance] == pytest.approx([0.0, 0.0], abs=1e-9)
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["constant_reference"]["played"] == ["bold", "bold"]


def test_without_a_reference_there_is_no_constant_mixture(tmp_path: Path) -> None:
    start = strength_config(tmp_path, "strength_start", ["calm", "any"])
    summary = gtsteer.psro(start, llm=llm_for(CountingBackend()),
                           proposer_llm=llm_for(ScriptedProposer({"proposer": [["bold"]],
                                                                  "responder": [["bold"]]})),
                           settings=PSROConfig(iterations=1, candidates=1), out=tmp_path / "r")
    assert summary.constant_reference is None
