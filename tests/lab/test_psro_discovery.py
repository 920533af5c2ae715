"""`python -m lab psro-discovery` (issue 40, item 2) on the strength test game, with doubles.

The strength domain (tests/psro_helpers.py) pays payoff_i = strength(own) - 0.5 strength(other);
the start config has `any` alone, the full one calm 0, assertive 1, submissive -1 and bold 2.
The embedded row's stand-in names `assertive`, then `bold` (the full game's best response and
its best constant mixture: gain 2 over `any`, so the 80% goal is reached); the Qwen row's
stand-in names `fierce` (strength 3), which the full game lacks, so its meta-strategy has no
value there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from psro_helpers import STRENGTH_CONFIG, Models, NamingProposer, llm_for

from gtsteer.binding import generate_instances
from gtsteer.binding.llm_instances import instances_jsonl
from gtsteer.domains import load_spec
from gtsteer.runs.units import RayOptions
from gtsteer.solvers.metrics import mean_ci
from lab.studies import psro_discovery as study
from lab.studies.table1 import ci


def strength_config(tmp_path: Path, name: str, stances: list[str]) -> Path:
    data = yaml.safe_load(STRENGTH_CONFIG.read_text())
    data.update(name=name, actions={"stance": stances})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def setup(tmp_path: Path):
    start = strength_config(tmp_path, "strength_start", ["any"])
    full = strength_config(tmp_path, "strength_full",
                           ["calm", "assertive", "submissive", "bold", "any"])
    results, doc = tmp_path / "results", tmp_path / "PSRO.md"
    doc.write_text("# PSRO\n\nbefore\n\n<!-- psro_discovery:start -->\nold\n"
                   "<!-- psro_discovery:end -->\n\nafter\n")
    args = ["--config", str(start), "--reference", str(full), "--results", str(results),
            "--doc", str(doc), "--games", "3", "--iterations", "3", "--candidates", "2"]
    return args, full, results, doc


def summary_of(results: Path, row: str) -> dict[str, Any]:
    return json.loads((results / row / "summary.json").read_text())


def test_every_row_runs_psro_on_one_seeded_instances_file(setup) -> None:
    args, full, results, doc = setup
    models = Models()
    study.main(args, clients=models)
    instances = results / "instances-3.jsonl"
    assert instances.read_text() == instances_jsonl(generate_instances(load_spec(full), 3, 0))
    for name, row in study.ROWS.items():
        summary = summary_of(results, name)
        assert summary["settings"]["operator"] == row.operator
        assert summary["settings"]["heldout"] and summary["settings"]["heldout_gate"]
        assert summary["instances_file"].endswith("instances-3.jsonl")
        assert summary["reference"].endswith("strength_full.yaml")
        assert summary["num_games"] == 3
        saved = json.loads((results / name / study.ROW_FILE).read_text())
        assert saved["settings"]["proposer"] == row.proposer
        assert not (results / name / "iterations").exists()  # summary.json holds them
    assert ("proposer", "local:qwen2.5-coder-0.5b") in models.asked
    # The embedded rows find assertive, then bold: the full game's best response.
    found = summary_of(results, "embedded-shotgun")
    assert found["constant_reference"]["played"] == ["bold", "bold"]
    assert [it["added"] for it in found["iterations"][:2]] == [["assertive"] * 2, ["bold"] * 2]
    assert found["final_populations"] == [["any", "assertive", "bold"]] * 2
    last = found["iterations"][-1]["reference"]
    assert last["fresh_gain"] == pytest.approx(2.0, abs=1e-3)
    assert last["cfr_gain"] == pytest.approx(1.2, abs=1e-3)
    # The held-out gate's record of each adopted instruction is in the summary.
    gate = found["iterations"][0]["oracles"][0]["heldout"]
    assert gate["candidate"] == pytest.approx(1.0) and gate["baseline"] == pytest.approx(0.0)
    assert gate["baseline_instruction"] == "any" and gate["holds"]
    qwen = summary_of(results, "qwen0.5b-shotgun")
    assert qwen["iterations"][-1]["reference"]["unmapped"] == ["fierce"]


def test_a_saved_row_is_kept_on_rerun_with_no_model_call(setup) -> None:
    args, _, results, _ = setup
    study.main([*args, "--rows", "embedded-shotgun"], clients=Models())
    before = (results / "embedded-shotgun" / "summary.json").read_bytes()
    again = Models()
    study.main([*args, "--rows", "embedded-shotgun"], clients=again)
    assert again.asked == [] and again.calls == 0
    assert (results / "embedded-shotgun" / "summary.json").read_bytes() == before
    # Other settings are another row: it runs again (the cache answers what it can).
    other = Models()
    study.main([*args, "--rows", "embedded-shotgun", "--candidates", "1"], clients=other)
    assert other.asked
    assert summary_of(results, "embedded-shotgun")["settings"]["candidates"] == 1


def test_remeasure_runs_a_saved_row_again_from_the_cache(setup) -> None:
    args, _, results, _ = setup
    study.main([*args, "--rows", "embedded-shotgun"], clients=Models())
    first = summary_of(results, "embedded-shotgun")
    again = Models()
    study.main([*args, "--rows", "embedded-shotgun", "--remeasure"], clients=again)
    assert again.asked and again.calls == 0  # every answer from the response cache
    second = summary_of(results, "embedded-shotgun")
    assert second["llm_calls"]["new_calls"] == 0

    def numbers(summary: dict[str, Any]) -> list[Any]:
        return [{k: v for k, v in it.items() if k not in ("wall_s", "llm")}
                for it in summary["iterations"]]

    assert numbers(second) == numbers(first)


def test_render_only_writes_the_numbers_of_the_saved_summaries(setup) -> None:
    args, _, results, doc = setup
    study.main(args, clients=Models())

    def no_model(role: str, model: str):
        raise AssertionError(f"render-only asked for a model ({role}: {model})")

    study.main([*args, "--render-only"], clients=no_model)
    text = doc.read_text()
    assert text.startswith("# PSRO\n\nbefore\n") and text.endswith("\nafter\n")
    assert text.count("<!-- psro_discovery:start -->") == 1 and "\nold\n" not in text
    section = text.split("<!-- psro_discovery:start -->")[1]
    for name in study.ROWS:
        assert f"### `{name}`" in section
        assert f"--rows {name} --games 3 --iterations 3 --candidates 2" in section
    found = summary_of(results, "embedded-shotgun")
    rows = [line for line in section.split("### `qwen0.5b-shotgun`")[0].splitlines()
            if re.match(r"\| \d+ \|", line)]
    assert len(rows) == len(found["iterations"])
    for line, it in zip(rows, found["iterations"], strict=True):
        points = it["reference"]["per_instance"]
        assert line.startswith(f"| {it['iteration']} |")
        for field in ("nash_conv", "gain", "fresh_gain"):
            assert ci(mean_ci([p[field] for p in points])) in line
        fresh = mean_ci([p["fresh_gain"] for p in points]).mean
        assert f"| {fresh / 2.0:.0%} [" in line  # of the constant mixture's fresh gain, 2
        value = ", ".join(f"{v:+.3f}" for v in it["solutions"]["rd"]["payoffs"])
        assert value in line
    assert "`assertive`" in rows[0] and "`bold`" in rows[1]
    # the gate's fresh-sample record of the adopted instruction, beside its baseline
    assert "proposer `assertive`: +1.000 vs `any` +0.000" in rows[0] and "kept" in rows[0]
    assert ("proposer `bold`, responder `bold`; its gain over `any` +2.000 [+2.000, +2.000]"
            " in-sample and +2.000 [+2.000, +2.000] on fresh samples") in section
    assert ('- iteration 0, proposer: values: "assertive".'
            " Scored in-sample: `assertive` +1.000 against the best current `any` +0.000."
            " Added `assertive`.") in section
    reading = [line for line in section.splitlines() if line.startswith("Reading")]
    assert len(reading) == 2
    assert "the goal is **reached**" in reading[0] and "+2.000 over `any`" in reading[0]
    assert "100% of the best constant mixture's +2.000 (goal: 80%, +1.600)" in reading[0]
    assert "Days adopted: `assertive` (proposer, iteration 0)" in reading[0]
    assert "plays `fierce`, which the full game lacks" in reading[1]
    assert "goal is not reached" in reading[1]
    assert "Only 3 instances: the issues ask for 10 or more." in reading[0]


def test_a_row_that_finds_nothing_says_what_the_proposer_named(setup, tmp_path: Path) -> None:
    args, _, results, doc = setup

    class Meek(Models):
        def __call__(self, role: str, model: str):
            if role == "writer":
                return super().__call__(role, model)
            self.asked.append((role, model))
            backend = NamingProposer("meek", ["meek", "timid"])
            self.proposers.append(backend)
            return llm_for(backend)

    study.main([*args, "--rows", "embedded-shotgun"], clients=Meek())
    section = doc.read_text()
    reading = next(line for line in section.splitlines() if line.startswith("Reading"))
    assert "No day was adopted." in reading
    assert 'None of its 1 proposals names a day ("meek")' in reading
    assert "the goal is **not reached**" in reading
    assert ("Not measured yet: `qwen0.5b-shotgun` (`python -m lab"
            " psro-discovery --rows qwen0.5b-shotgun` runs them)." in section)


def test_bad_options_are_refused_before_any_call(setup) -> None:
    args, _, _, _ = setup
    for extra in (["--rows", "nope"], ["--games", "1"], ["--workers", "2"],
                  ["--meta-solver", "best"]):
        with pytest.raises(SystemExit):
            study.main([*args, *extra], clients=lambda role, model: pytest.fail("called"))


def test_ray_options_go_through_to_the_runs() -> None:
    assert study.parse(["--ray", "local", "--workers", "2"]).ray_options == RayOptions("local", 2)
    assert study.parse([]).ray_options is None
