"""What a failed check raises (hard tier) and what a soft one warns (warning tier)."""

from __future__ import annotations


class ConformanceError(AssertionError):
    """A game failed a conformance check; the message names the check and the game."""


class CheckWarning(UserWarning):
    """A soft property is off (PettingZoo's api_test warns for these and asserts the rest)."""


def fail(name: str, check: str, detail: str) -> ConformanceError:
    return ConformanceError(f"{name}: conformance check `{check}` failed: {detail}")
