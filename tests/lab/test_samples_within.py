"""The within-tree samples study (lab/studies/samples_within.py; issue 57, item 5): one tree per
instance at S0 opening samples, CFR again on subsets of them, each opening scored on the
samples left out. Payoffs here are known per (opening instruction, opening sample)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from solve_helpers import GUESS_SECRET, MIXED_2X2, ConstantBackend

from gtsteer.binding import Domain, expand_sync, generate_instances, make_game
from gtsteer.binding.instances import stable_int
from gtsteer.domains import register_domain
from gtsteer.llm import LLM
from gtsteer.solvers import expected_returns, solve_cfr, uniform
from lab.bench import benchdoc
from lab.studies import samples_within as study

#: The proposer's payoff by its opening instruction and the opening message's sample index.
VALUES = {"a": [4.0, 0.0, 0.0, 0.0], "b": [1.0, 2.0, 0.2, 2.5], "any": [0.0, 0.5, 0.0, 0.0]}


async def by_sample(ctx: Any) -> list[float]:
    """The proposer gets VALUES[its instruction][the opening's sample index]; the responder 0
    whatever it does (so CFR's opening is the best in-sample instruction)."""
    return [VALUES[ctx.instructions(0)[0]][ctx.history[1]], 0.0]


async def by_text(ctx: Any) -> list[float]:
    """A payoff that depends on every sampled word (for the exactness check)."""
    value = float(stable_int("pay", [t.text for t in ctx.transcript]) % 7 - 3)
    return [value, -value]


register_domain(Domain(name="test_within_known", utility=by_sample,
                       greedy=lambda spec, info: {"move": "b"}))
register_domain(Domain(name="test_within_text", utility=by_text))


def config(tmp_path: Path, domain: str, seeds: Any = 4) -> Path:
    data = yaml.safe_load(MIXED_2X2.read_text())
    data |= {"name": domain, "domain": domain, "num_llm_seeds": seeds}
    data["payoff"] = {"min": -4, "max": 4, "prompt": "{transcript}"}
    path = tmp_path / f"{domain}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def test_the_opening_restricted_to_a_subset_is_the_tree_with_those_samples(
        tmp_path: Path) -> None:
    # Samples 0 and 1 of a [4, 1] tree are the samples of a [2, 1] tree (seeds follow the
    # sample indices), so restricting the opening to {0, 1} must give that game exactly.
    big = study.study_spec(config(tmp_path, "test_within_text"), [4, 1], None)
    small = study.study_spec(config(tmp_path, "test_within_text"), [2, 1], None)
    instance = generate_instances(big, 1, 0)[0]
    full, two = (make_game(s, instance, LLM("fake")) for s in (big, small))
    for game in (full, two):
        assert not expand_sync(game, progress=False).failed
    subset = study.OpeningSubset(full, [1, 0])
    root = subset.new_initial_state().child(0)
    assert root.chance_outcomes() == [(0, 0.5), (1, 0.5)]
    assert root.child(0).child(2).chance_outcomes() == [(0, 1.0)]  # later depths untouched
    assert expected_returns(subset, [uniform()] * 2) == pytest.approx(
        expected_returns(two, [uniform()] * 2))
    assert solve_cfr(subset, iterations=200).policy == solve_cfr(two, iterations=200).policy
    with pytest.raises(ValueError, match="kept"):
        study.OpeningSubset(full, [4])


def test_each_subset_solve_picks_the_best_in_sample_instruction_and_is_scored_on_the_rest(
        tmp_path: Path) -> None:
    spec = study.study_spec(config(tmp_path, "test_within_known"), [4, 1], None)
    instance = generate_instances(spec, 1, 0)[0]
    record = study.measure_instance(spec, instance, LLM("fake"), sizes=[1, 2], draws=0)
    names = record.instructions
    assert record.values == [[VALUES[a] for a in names]]
    assert [s.size for s in record.sizes] == [1, 2]
    for size in record.sizes:
        assert [s.kept for s in size.subsets] == [
            list(c) for c in itertools.combinations(range(4), size.size)]
        for s in size.subsets:
            rest = [i for i in range(4) if i not in s.kept]
            best = max(names, key=lambda a: mean([VALUES[a][i] for i in s.kept]))
            assert s.opening[0][names.index(best)] > 0.999
            assert s.in_sample == pytest.approx(mean([VALUES[best][i] for i in s.kept]), abs=1e-3)
            assert s.left_out == pytest.approx(mean([VALUES[best][i] for i in rest]), abs=1e-3)
            assert s.any_left_out == pytest.approx(mean([VALUES["any"][i] for i in rest]))
            assert s.greedy_left_out == pytest.approx(mean([VALUES["b"][i] for i in rest]))
    # S = 2, the subset {0, 1}: `a` (mean 2) beats `b` (1.5) in-sample, and on samples 2 and 3
    # it is worth 0 while `b` is worth 1.35: selection on sampling noise, by hand.
    first = record.sizes[1].subsets[0]
    assert first.kept == [0, 1] and first.left_out == pytest.approx(0.0, abs=1e-3)
    two = record.sizes[1]
    gains_in = [s.in_sample - s.any_in_sample for s in two.subsets]
    gains_out = [s.left_out - s.any_left_out for s in two.subsets]
    assert two.in_sample_gain == pytest.approx(mean(gains_in))
    assert two.selection == pytest.approx(mean(gains_in) - mean(gains_out))
    assert two.versus_greedy == pytest.approx(mean(
        [s.left_out - s.greedy_left_out for s in two.subsets]))
    # The full S0 = 4 solve: `a` (mean 1) vs `b` (mean 1.425): b, in-sample gain 1.425 - 0.125.
    assert record.full_gain == pytest.approx(1.425 - 0.125, abs=1e-3)


def test_disjoint_draws_partition_the_samples_and_are_seeded() -> None:
    draws = study.subsets(8, 2, 3, seed=5)
    assert len(draws) == 12
    for d in range(3):
        assert sorted(i for kept in draws[4 * d:4 * d + 4] for i in kept) == list(range(8))
    assert draws == study.subsets(8, 2, 3, seed=5) != study.subsets(8, 2, 3, seed=6)
    assert len(study.subsets(8, 3, 1, seed=0)) == 2  # 8 // 3 disjoint 3-subsets
    with pytest.raises(ValueError, match="left out"):
        study.subsets(8, 8, 1, seed=0)


def test_a_rerun_keeps_every_finished_instance_and_makes_no_model_call(tmp_path: Path) -> None:
    path = config(tmp_path, "test_within_known")
    backend = ConstantBackend()
    llm = LLM("constant", backend=backend, use_cache=False)
    results = tmp_path / "results"
    first, failed = study.run_study(path, llm, 2, [4, 1], [2], 1, results, report=lambda _: None)
    # Only expanding the two S0 trees calls the model; the subset solves and scores ask nothing.
    expanded = ConstantBackend()
    spec = study.study_spec(path, [4, 1], None)
    for instance in generate_instances(spec, 2, 0):
        game = make_game(spec, instance, LLM("constant", backend=expanded, use_cache=False))
        expand_sync(game, progress=False)
    assert failed == 0 and backend.calls == expanded.calls > 0
    assert sum(r.new_calls for r in first) == expanded.calls
    again, _ = study.run_study(path, llm, 2, [4, 1], [2], 1, results, report=lambda _: None)
    assert backend.calls == expanded.calls and again == first
    # Other settings are another key: that instance is measured again.
    study.run_study(path, llm, 1, [4, 1], [1], 1, results, report=lambda _: None)
    assert backend.calls == expanded.calls + first[0].new_calls


def test_render_only_draws_the_same_section_from_the_saved_files(tmp_path: Path) -> None:
    path = config(tmp_path, "test_within_known")
    results, docs = tmp_path / "results", [tmp_path / "a.md", tmp_path / "b.md"]
    args = [str(path), "--samples", "4,1", "--subsets", "1,2", "--games", "3",
            "--results", str(results), "--llm", "fake", "--quiet"]
    study.main([*args, "--doc", str(docs[0])])
    study.main([*args, "--doc", str(docs[1]), "--render-only"])
    start, end = benchdoc.markers(study.section("test_within_known"))
    texts = [benchdoc.read_section(d, start, end) for d in docs]
    assert texts[0] == texts[1] and "| 2 | 3 |" in texts[0]
    assert "--render-only" in texts[0] and "--games 3" in texts[0]
    rows = study.rows(study.saved_study(results)[1])
    assert [r.size for r in rows] == [1, 2] and rows[1].n == 3


def test_a_dealt_game_weighs_its_deals_and_splits_only_the_opening_samples(
        tmp_path: Path) -> None:
    data = yaml.safe_load(GUESS_SECRET.read_text())
    path = tmp_path / "guess.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = study.study_spec(path, [4, 1], deals=2)
    instance = generate_instances(spec, 1, 0)[0]
    record = study.measure_instance(spec, instance, LLM("fake"), sizes=[2], draws=1)
    assert record.deal_weights == [0.5, 0.5] and len(record.values) == 2
    for s in record.sizes[0].subsets:  # the payoffs ignore the words: in = out
        assert s.in_sample == pytest.approx(s.left_out)


def test_bad_flags_fail_before_any_model_call(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = config(tmp_path, "test_within_known")
    for flags in (["--subsets", "4"], ["--samples", "x"], ["--games", "1"]):
        with pytest.raises(SystemExit) as done:
            study.main([str(path), "--samples", "4,1", *flags, "--llm", "fake"])
        assert done.value.code == 2
    assert "--subsets" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # every 8-subset of 16 samples: 12,870 CFR solves
        study.main([str(path), "--samples", "16,1", "--subsets", "8", "--llm", "fake"])
    assert "12,870 subsets of 16 samples" in capsys.readouterr().err
    study.main([str(path), "--samples", "4,1", "--subsets", "2", "--games", "5", "--dry-run"])
    # 3 x 4 openings, 12 x 3 replies, 36 terminals: 84 requests at most per instance
    assert "at most 84 requests per instance, 420 for 5" in capsys.readouterr().out


def test_the_committed_section_is_the_render_of_docs_data(tmp_path, monkeypatch) -> None:
    """docs/BENCHMARKS.md's within-tree section is what `--render-only` writes from
    docs/data/samples_within_meeting today (no model call)."""
    from lab.bench import benchdoc

    root = Path(__file__).resolve().parents[2]
    start, end = benchdoc.markers(study.section("schedule_meeting_dow"))
    committed = benchdoc.DOC.read_text()
    doc = tmp_path / "B.md"
    doc.write_text(f"{start}\n{end}\n")
    monkeypatch.chdir(root)
    study.main(["gtsteer/configs/schedule_meeting_dow.yaml", "--results",
                "docs/data/samples_within_meeting", "--render-only", "--doc", str(doc)])
    rendered = doc.read_text()
    assert "10 of 10" in rendered
    assert rendered.strip() in committed
