"""The meeting reward on the embedded chat model: templated dialogues with known outcomes.
Slow: it runs SmolLM2 (greedy log-likelihoods, so the numbers are fixed for a model file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtsteer.domains import load_spec
from gtsteer.llm import LLM
from gtsteer.runs import eval_reward
from gtsteer.runs.context import RunContext
from gtsteer.runs.eval_reward import CONFIGURED, write_cases

pytestmark = pytest.mark.slow

DOW = Path(__file__).resolve().parents[2] / "gtsteer" / "configs" / "schedule_meeting_dow.yaml"


def test_smollm_reads_agreements_and_refusals_on_templated_meetings() -> None:
    cases = write_cases(load_spec(DOW), 6, seed=0)
    report = eval_reward.measure(
        DOW, RunContext.of(llm=LLM("local:smollm2-135m", use_cache=False), progress=False),
        eval_reward.RewardOptions(cases=6))
    exact = {o: 0 for o in ("valid", "rejected", "incomplete")}
    paid_days = set()
    for case, scored in zip(cases, report.cases, strict=True):
        predicted = scored.predicted[CONFIGURED]
        exact[case.outcome] += predicted == case.truth
        if case.outcome == "valid" and predicted == case.truth:
            paid_days.add(case.facts["day"])
    # The JSON extraction this replaced read 0 of the accepted proposals right.
    assert exact["valid"] >= 3
    assert exact["rejected"] >= 5
    assert exact["incomplete"] >= 3
    assert len(paid_days) >= 2  # not one favourite day for every transcript
