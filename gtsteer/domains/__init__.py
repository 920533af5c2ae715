"""Domain code that YAML cannot say: exact utilities, judges, verdict tables, generators.

Importing this package registers every built-in domain with gtsteer.binding.
"""

from gtsteer.domains import (
    debate,
    fruit_trade,
    fruit_trade_cases,
    schedule_meeting,
    schedule_meeting_cases,
    verdict,
)

__all__ = [
    "debate",
    "fruit_trade",
    "fruit_trade_cases",
    "schedule_meeting",
    "schedule_meeting_cases",
    "verdict",
]
