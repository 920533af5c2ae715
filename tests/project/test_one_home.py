"""Concepts with one home: the Wilson interval lives in `solvers/metrics.py`, and the
upper floors turn a driver's `llm` argument into a client only through `gtsteer.llm.as_llm`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gtsteer.solvers.metrics import wilson

PACKAGE = Path(__file__).resolve().parents[2] / "gtsteer"


def sources(*rooms: str) -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8")
            for room in rooms for p in sorted((PACKAGE / room).rglob("*.py"))}


def test_only_solvers_metrics_computes_a_wilson_interval() -> None:
    found = [name for name, text in sources(".").items()
             if "binomtest" in text or re.search(r"method=[\"']wilson", text)]
    assert found == ["solvers/metrics.py"]


def test_one_proportion_type_spelled_as_each_file_spells_it() -> None:
    """Win rates are `Proportion`s; a report keeps its own field names by `Spelling`."""
    from pydantic import BaseModel

    from gtsteer.solvers.metrics import Proportion, TeamRate, WinRate

    class Report(BaseModel):
        verdict: WinRate
        team: TeamRate
        reading: Proportion

    share = wilson(8, 10)
    report = Report(verdict=share, team=share, reading=share)
    data = json.loads(report.model_dump_json())
    assert data["verdict"] == {"wins": 8, "games": 10, "rate": 0.8, "ci_low": share.ci_low,
                               "ci_high": share.ci_high}
    assert list(data["team"]) == ["wins", "games", "rate", "low", "high"]
    assert list(data["reading"]) == ["correct", "n", "accuracy", "ci_low", "ci_high"]
    assert Report.model_validate(data) == report
    assert (share.ci_low, share.ci_high) == (pytest.approx(0.4902, abs=1e-4),
                                             pytest.approx(0.9433, abs=1e-4))
    assert wilson(0, 0) == Proportion(correct=0, n=0, accuracy=0.0, ci_low=0.0, ci_high=0.0)


def test_drivers_build_clients_only_through_as_llm() -> None:
    rooms = ("binding", "runs", "cli", "werewolf", "imitation", "solvers", "domains", "checks")
    copies = [name for name, text in sources(*rooms).items()
              if re.search(r"isinstance\(\w+, LLM\) else LLM\(", text)]
    assert copies == []
