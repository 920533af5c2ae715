"""What runs the tension experiment (issue 57 item 6; docs/TENSION.md section 3): the shipped
game's samples, the primary contrast per responder replay on a dealt game's fresh samples, and
`python -m lab table1 --deals K` rows that never mix with undealt ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from domain_support import spec_of

from gtsteer.binding.instances import make_instance
from gtsteer.binding.loader import make_game
from gtsteer.imitation.readers import nearest_reader
from gtsteer.llm import LLM
from gtsteer.llm.embed import Embedder
from gtsteer.solvers import expected_returns, solve_cfr
from gtsteer.solvers import heldout as heldout_module
from gtsteer.solvers.heldout import OPENING, greedy_baseline, measure_heldout

OPPOSED = "schedule_meeting_opposed"
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def test_the_shipped_tension_game_samples_two_openings_and_one_of_each_reply() -> None:
    # TENSION.md section 3: [2, 1, 1] (section 2's [8, 2, 2] cost 13x the requests).
    assert spec_of(OPPOSED).num_llm_seeds == [2, 1, 1]


def day_embedder() -> Embedder:
    """Texts as their counts of each day's name (and a constant): only the days matter."""

    def encode(texts: list[str]) -> np.ndarray:
        return np.array([[t.count(d) for d in DAYS] + [0.1] for t in texts], dtype=np.float32)

    return Embedder("test-week", len(DAYS) + 1, encode, cache=False)


def dealt_games(deals: int = 2):
    spec = spec_of(OPPOSED, num_llm_seeds=[1, 1, 1])
    spec = spec.with_deals(deals) if deals > 1 else spec
    instance, llm = make_instance(spec, 0), LLM("fake")
    return make_game(spec, instance, llm), make_game(spec, instance, llm, sample_offset=1)


def measured(monkeypatch: pytest.MonkeyPatch, deals: int = 2):
    solved, fresh = dealt_games(deals)
    policy = solve_cfr(solved, solver="cfr+", iterations=100).policy
    expand = heldout_module.expand_sync

    def expand_then_refuse(game, **kwargs):  # the measurement reads only what was expanded
        report = expand(game, **kwargs)

        async def refuse(*args, **kwargs):
            raise AssertionError("the measurement asked for a node the expansion left out")

        monkeypatch.setattr(game.llm.backend, "complete", refuse)
        return report

    monkeypatch.setattr(heldout_module, "expand_sync", expand_then_refuse)
    held = measure_heldout(solved, policy, fresh, progress=False,
                           readers={"nearest": nearest_reader(day_embedder())})
    return solved, fresh, held


def test_a_dealt_game_compares_the_opening_with_greedys_under_each_responder_replay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    solved, fresh, held = measured(monkeypatch)
    assert solved.dealt
    cells = {v.others: v for v in held.versus
             if (v.player, v.replay, v.baseline) == (0, OPENING, "greedy")}
    # the clean cell (responder on `any`) as before, and one cell per continuation
    assert set(cells) == {"any", "nearest", "greedy"}
    greedy = greedy_baseline(fresh)
    assert greedy is not None
    # Greedy's side of the greedy continuation is the whole game played greedy by both.
    everyone_greedy = expected_returns(fresh, [greedy, greedy])[0]
    assert cells["greedy"].baseline_value == pytest.approx(float(everyone_greedy), abs=1e-9)
    for cell in cells.values():
        assert cell.gain == pytest.approx(cell.policy_value - cell.baseline_value)
    # The responder is not compared against a continuation: only the first mover is.
    assert {v.others for v in held.versus if v.player == 1} == {"any", "policy"}


def test_an_undealt_game_measures_no_continuation_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, held = measured(monkeypatch, deals=1)
    assert {v.others for v in held.versus if v.player == 0} == {"any"}


ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "gtsteer" / "configs" / f"{OPPOSED}.yaml"


def test_a_dealt_table1_row_shows_both_contrasts_and_renders_again_alone(
        tmp_path: Path) -> None:
    from lab.studies import table1

    results, doc = tmp_path / "results", tmp_path / "T.md"
    common = ["--llm", "fake", "--games", "2", "--steering-samples", "0", "--heldout",
              "--results", str(results), "--doc", str(doc), str(CONFIG)]
    assert table1.main([*common, "--deals", "2", "--quiet"]) == 0
    saved = json.loads((results / f"{OPPOSED}-deals2" / "table1_row.json").read_text())
    row = saved["row"]
    assert row["deals"] == 2 and "--deals 2" in saved["command"]
    values = {k: len(v) for k, v in row["per_instance"].items()}
    for rest in ("nearest", "greedy"):
        assert values[f"versus_player0_opening_greedy_others_{rest}"] == 2
    page = doc.read_text()
    section = page.split("### Primary contrast of a dealt row")[1].split("###")[0]
    lines = [ln for ln in section.splitlines()
             if ln.startswith(f"| `{OPPOSED}` | [2, 1, 1], dealt 2 |")]
    # the two declared contrasts (Holm over them); another reader's continuation is exploratory
    assert [ln.split(" | ")[4] for ln in lines] == ["`nearest`", "`greedy`"]
    assert all("sign p" in ln for ln in lines)
    # The undealt primary table is not this row's (it declares its own).
    assert "### Primary contrast (declared): the proposer's" not in page
    # --render-only rebuilds it from the saved row; without --deals the dealt row is not taken.
    first = page
    assert table1.main([*common, "--deals", "2", "--render-only"]) == 0
    strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("Written by")]  # noqa: E731
    assert strip(doc.read_text()) == strip(first)
    assert table1.stored_row(results, OPPOSED, "fake", 2, 0, True) is None
    assert table1.main([*common, "--render-only"]) == 0
    assert "dealt 2" not in doc.read_text()


def test_table1_refuses_a_deal_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    from lab.studies import table1

    with pytest.raises(SystemExit) as exc:
        table1.main(["--llm", "fake", "--deals", "0", str(CONFIG)])
    assert exc.value.code == 2 and "--deals" in capsys.readouterr().err
