"""Strings and numbers as both Gambit and OpenSpiel's `efg_game` parser read them.

OpenSpiel's parser (open_spiel/games/efg_game/efg_game.cc, `NextToken`) ends a quoted string at
the next `"` and knows no escape, and splits tokens only on space, CR and LF; Gambit reads
`\\"` as an escape. So a label never holds a quote or a backslash, and numbers are written so
both read the same value: integers plainly, other floats as their shortest exact decimal
(never an exponent), probabilities as a small fraction where one equals the float exactly
(both parse `X/Y`; Gambit then sums chance probabilities to exactly one).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

#: The largest denominator a probability is written with (OpenSpiel parses X/Y as C++ ints).
MAX_DENOMINATOR = 1_000_000


def label(text: str) -> str:
    """`text` as a quoted label: quotes become apostrophes, backslashes slashes, whitespace
    runs (tabs and newlines too, which OpenSpiel would not split on) one space."""
    clean = re.sub(r"\s+", " ", text.replace('"', "'").replace("\\", "/")).strip()
    return f'"{clean}"'


def unquoted(quoted: str) -> str:
    """The label's text without its quotes."""
    return quoted[1:-1]


def number(x: float) -> str:
    """A payoff: the float's shortest round-trip decimal, positional (`1e-05` -> `0.00001`)."""
    if not math.isfinite(x):
        raise ValueError(f"payoff: must be finite, got {x}")
    x = float(x) + 0.0  # -0.0 -> 0.0
    if x.is_integer():
        return str(int(x))
    return format(Decimal(repr(x)), "f")


def probability(p: float) -> str:
    """A chance probability: `a/b` when a fraction with b <= MAX_DENOMINATOR is this float
    (1/3 is written `1/3`, so Gambit sums a node's outcomes to exactly 1), else `number`."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"chance probability: must be in [0, 1], got {p}")
    frac = Fraction(p).limit_denominator(MAX_DENOMINATOR)
    if float(frac) != p:
        return number(p)
    return str(frac.numerator) if frac.denominator == 1 else f"{frac.numerator}/{frac.denominator}"
