"""Concepts with one home: the Wilson interval lives in `solvers/metrics.py`, and the
upper floors turn a driver's `llm` argument into a client only through `gtsteer.llm.as_llm`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gtsteer.runs.werewolf_evaluate import win_rate
from gtsteer.solvers.metrics import wilson

PACKAGE = Path(__file__).resolve().parents[1] / "gtsteer"


def sources(*rooms: str) -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8")
            for room in rooms for p in sorted((PACKAGE / room).rglob("*.py"))}


def test_only_solvers_metrics_computes_a_wilson_interval() -> None:
    found = [name for name, text in sources(".").items()
             if "binomtest" in text or re.search(r"method=[\"']wilson", text)]
    assert found == ["solvers/metrics.py"]


def test_werewolf_win_rates_use_the_solvers_interval() -> None:
    rate, share = win_rate(8, 10), wilson(8, 10)
    assert (rate.wins, rate.games, rate.rate) == (8, 10, 0.8)
    assert (rate.low, rate.high) == (share.ci_low, share.ci_high)
    assert rate.low == pytest.approx(0.4902, abs=1e-4)
    assert rate.high == pytest.approx(0.9433, abs=1e-4)


def test_drivers_build_clients_only_through_as_llm() -> None:
    rooms = ("binding", "runs", "cli", "werewolf", "imitation", "solvers", "domains", "checks")
    copies = [name for name, text in sources(*rooms).items()
              if re.search(r"isinstance\(\w+, LLM\) else LLM\(", text)]
    assert copies == []
