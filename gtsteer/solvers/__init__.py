"""Solvers and metrics: OpenSpiel CFR/CFR+ on cached trees, NashConv, CFR gain, head-to-head."""

from gtsteer.solvers.analysis import GameValues, analyze, baseline_strategies
from gtsteer.solvers.cfr import SOLVERS, CFRResult, PolicyTable, cached_tree, solve_cfr
from gtsteer.solvers.deals import pool_deal_policies
from gtsteer.solvers.evaluate import (
    Replayed,
    Strategy,
    StrategyError,
    expected_returns,
    first_decision_distribution,
    fixed,
    tabular,
    truncated,
    uniform,
)
from gtsteer.solvers.metrics import MeanCI, cfr_gain, head_to_head, mean_ci, nash_conv

__all__ = [
    "SOLVERS",
    "CFRResult",
    "GameValues",
    "MeanCI",
    "PolicyTable",
    "Replayed",
    "Strategy",
    "StrategyError",
    "analyze",
    "baseline_strategies",
    "cached_tree",
    "cfr_gain",
    "expected_returns",
    "first_decision_distribution",
    "fixed",
    "head_to_head",
    "mean_ci",
    "nash_conv",
    "pool_deal_policies",
    "solve_cfr",
    "tabular",
    "truncated",
    "uniform",
]
