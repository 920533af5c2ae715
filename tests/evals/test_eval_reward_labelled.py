"""`gtsteer eval reward CONFIG --labelled FILE`: each reading of what was agreed scored on
hand-labelled dialogues (gtsteer/data/reward_labelled_offers.yaml), accuracy with Wilson
intervals overall and by label kind, the CLI, and bad input refused before any model call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from domain_support import config_dict
from typer.testing import CliRunner

from gtsteer.binding.reward import CONTENT_FREE
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.domains.fruit_offer_cases import label_trade
from gtsteer.llm import LLM, Backend, GenerationRequest
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_reward_labelled import (
    FILE,
    LabelledOptions,
    load_labelled_dialogues,
    measure,
)
from gtsteer.solvers.metrics import wilson

ROOT = Path(__file__).resolve().parents[2]
OFFER = ROOT / "gtsteer" / "configs" / "trade_fruit_offer.yaml"
LABELLED = ROOT / "gtsteer" / "data" / "reward_labelled_offers.yaml"
runner = CliRunner()


class SaysNo(Backend):
    """A reward model that answers "no" to every agreement question, calibrated or not (as
    SmolLM2 did): "no" is likelier after any transcript than after the content-free one."""

    kind = "says-no"

    def __init__(self) -> None:
        super().__init__("says-no")
        self.asked = 0

    async def complete(self, request: GenerationRequest, json_schema: dict | None = None):
        raise AssertionError("the readings ask choices only")

    async def score_options(self, request: GenerationRequest, options: list[str]):
        self.asked += 1
        real = CONTENT_FREE not in request.as_text()
        return {o: float(o == "no" and real) for o in options}


def _measure(config: Path = OFFER, labelled: Path = LABELLED) -> tuple[Any, SaysNo]:
    backend = SaysNo()
    ctx = RunContext.of(llm=LLM("says-no", backend=backend, use_cache=False), progress=False)
    return measure(config, ctx, LabelledOptions(labelled=labelled)), backend


def test_the_labelled_file_loads_with_speakers_and_labels() -> None:
    items = load_labelled_dialogues(LABELLED)
    assert len(items) == 6
    iris = items[4]  # tagged: Iris, the second name, speaks first
    assert [(t.speaker, t.text) for t in iris.turns()] == [
        (1, "Would you give me 2 blueberries for my kiwi?"), (0, "Sounds good to me.")]
    spec = load_spec(OFFER)
    # "first" is the first speaker (Iris); the trade is kept in name order (Grace, Iris).
    assert label_trade(spec, iris.agreed, 1) == ({"blueberry": 2}, {"kiwi": 1})
    assert [t.speaker for t in items[5].turns()] == [0, 1, 0]


def test_each_reading_is_scored_per_item_and_by_label_kind() -> None:
    report, backend = _measure()
    assert report.paths == ["exact", "ask"] and report.configured == "exact"
    exact = {kind: report.accuracy_of("exact", kind) for kind in ("all", "agreed", "none")}
    assert [(a.items, a.accuracy.correct) for a in exact.values()] == [(6, 6), (4, 4), (2, 2)]
    assert exact["all"].accuracy == wilson(6, 6)
    # A reward model that always says no gets every "none" right and no agreement.
    ask = {kind: report.accuracy_of("ask", kind) for kind in ("all", "agreed", "none")}
    assert [(a.items, a.accuracy.correct) for a in ask.values()] == [(6, 2), (4, 0), (2, 2)]
    assert ask["agreed"].accuracy == wilson(0, 4)
    first = report.items[0]
    assert first.label == "Alice gives 1 kiwi and Bob gives 1 apple" and first.kind == "agreed"
    assert first.read == {"exact": first.label, "ask": "none"}
    assert first.correct == {"exact": True, "ask": False}
    assert first.transcript == "Alice: How about my 1 kiwi for your 1 apple?\nBob: Deal, I accept."
    assert report.items[4].label == "Grace gives 2 blueberries and Iris gives 1 kiwi"
    # Only `ask` calls the model: the yes/no and its content-free twin, on the 6 items that
    # name an exact offer (each item is its own instance, so no twin is shared).
    assert backend.asked == report.llm_calls.requests == 12


def test_a_config_that_asks_puts_ask_first(tmp_path: Path) -> None:
    data = config_dict("trade_fruit_offer")
    data["params"]["agreement"] = "ask"
    config = tmp_path / "asked.yaml"
    config.write_text(yaml.safe_dump(data))
    report, _ = _measure(config)
    assert report.paths == ["ask", "exact"] and report.configured == "ask"


def test_a_wrong_label_counts_against_its_kind(tmp_path: Path) -> None:
    items = yaml.safe_load(LABELLED.read_text())
    items[0]["agreed"] = None  # "Deal, I accept." labelled as no agreement
    items[1]["agreed"] = {"first": {"apple": 1}, "second": {"kiwi": 2}}  # another count
    labelled = tmp_path / "wrong.yaml"
    labelled.write_text(yaml.safe_dump({"items": items}))
    report, _ = _measure(labelled=labelled)
    none, agreed = report.accuracy_of("exact", "none"), report.accuracy_of("exact", "agreed")
    assert (none.items, none.accuracy.correct) == (3, 2)
    assert (agreed.items, agreed.accuracy.correct) == (3, 2)
    assert report.items[1].read["exact"] == "Emma gives 1 apple and Henry gives 1 kiwi"
    assert not report.items[1].correct["exact"]


def test_the_cli_writes_the_report_on_the_fake_model(tmp_path: Path) -> None:
    out = tmp_path / "rw"
    result = runner.invoke(app, ["eval", "reward", str(OFFER), "--llm", "fake",
                                 "--labelled", str(LABELLED), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "exact (configured)" in result.output and "100%" in result.output
    data = json.loads((out / FILE).read_text())
    assert data["schema_version"] == 1 and data["paths"] == ["exact", "ask"]
    assert len(data["items"]) == 6 and not (out / "reward.json").exists()
    assert {(a["path"], a["kind"]) for a in data["accuracy"]} == {
        (p, k) for p in ("exact", "ask") for k in ("all", "agreed", "none")}


@pytest.mark.parametrize(("item", "says"), [
    ({"names": ["A", "B"], "transcript": ["Hi"], "agreed": {"first": {"mango": 1},
                                                          "second": {"kiwi": 1}}},
     "item 0: field `agreed`: 'mango' is not one of params.fruits"),
    ({"names": ["A", "B"], "transcript": ["Hi"], "agreed": {"first": {"kiwi": 0},
                                                          "second": {"apple": 1}}},
     "item 0: field `agreed`: `first`: the count of 'kiwi' is 0"),
    ({"names": ["A", "B"], "transcript": ["Hi"], "agreed": {"A": {"kiwi": 1}}},
     "item 0: field `agreed`: expected {first: {fruit: n}, second: {fruit: n}}"),
    ({"names": ["A", "B"], "transcript": ["Hi"]}, "item 0: field `agreed`: missing"),
    ({"names": ["A"], "transcript": ["Hi"], "agreed": None}, "item 0: field `names`"),
    ({"names": ["A", "B"], "transcript": [], "agreed": None}, "item 0: field `transcript`"),
    ({"names": ["A", "B", "C"], "transcript": ["Hi"], "agreed": None},
     "item 0: field `names`: trade_fruit_offer has 2 players"),
])
def test_bad_items_are_refused_by_field_before_any_call(
    tmp_path: Path, item: dict, says: str
) -> None:
    labelled = tmp_path / "bad.yaml"
    labelled.write_text(yaml.safe_dump([item]))
    with pytest.raises(ValueError, match="--labelled") as info:
        _measure(labelled=labelled)
    assert says in str(info.value)


def test_the_cli_refuses_what_it_cannot_score(tmp_path: Path) -> None:
    both = runner.invoke(app, ["eval", "reward", str(OFFER), "--llm", "fake", "-q",
                               "--labelled", str(LABELLED), "--cases", "3"])
    assert both.exit_code == 2 and "--cases and --labelled" in both.output
    tone = runner.invoke(app, ["eval", "reward", "trade_fruit_tone",
                               "--llm", "fake", "-q", "--labelled", str(LABELLED),
                               "-o", str(tmp_path / "t")])
    assert tone.exit_code == 2 and "domain `fruit_trade` cannot say what" in tone.output
    missing = runner.invoke(app, ["eval", "reward", str(OFFER), "--llm", "fake", "-q",
                                  "--labelled", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "no file" in missing.output
    (tmp_path / "empty.yaml").write_text("{}\n")
    empty = runner.invoke(app, ["eval", "reward", str(OFFER), "--llm", "fake", "-q",
                                "--labelled", str(tmp_path / "empty.yaml")])
    assert empty.exit_code == 2 and "expected a list of items" in empty.output


def test_the_exact_reading_on_the_blind_labelled_set() -> None:
    """gtsteer/data/fruit_agreement_labelled.yaml was written blind to every reader (its header
    says how), in the messy style SmolLM2 writes, with `first:`/`second:` for the speakers.
    The exact reading scored 74 of 82 (90%) when it was first read, after it was written; this
    guards that reading against regressions (a change that reads worse must say why here)."""
    blind = ROOT / "gtsteer" / "data" / "fruit_agreement_labelled.yaml"
    items = load_labelled_dialogues(blind)
    assert len(items) == 82 and items[0].names == ["Alice", "Bob"]
    report, _ = _measure(labelled=blind)
    exact = report.accuracy_of("exact", "all")
    assert exact.items == 82 and exact.accuracy.correct >= 74
    assert report.accuracy_of("exact", "agreed").accuracy.correct >= 33  # of 38
    assert report.accuracy_of("exact", "none").accuracy.correct >= 41  # of 44
