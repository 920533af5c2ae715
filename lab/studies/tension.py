"""Does a game hold tension a solver can find and a heuristic misses? A model-free answer.

Before any model time is spent on the tension experiment (issue 57, docs/TABLE1.md "The tension
experiment"), this study plays candidate games with a perfect writer (every message says exactly
its instruction) and a perfect reader (exact payoffs), and measures, per instance, what the
proposer's greedy opening (the domain's greedy hook: its own best day, its own best affordable
offer) falls short of its best response. The best response is computed the way a dealt solver
would see the game: the proposer knows its own private information and only the *distribution*
of the responder's, which it averages over `belief_draws` responder draws; the shortfall is then
scored against an independent true responder, so it is what the proposer can expect to gain.

The responder is modelled two ways, the two the experiment's primary contrast uses:
- `rational`: with no later message, it accepts whatever pays it more than nothing; with one
  more exchange, it counters with its own best free option when that option, discounted by the
  chance the proposer can take it, pays more than accepting (a best response to a proposer who
  takes any counter it can attend).
- `reading-greedy`: accepts a free day within `k` of its own best free day (an offer that pays
  it something), else counters with its own best.

Candidate games (names are the table's rows):
- `meeting`: the shipped meeting config, one reply, away days uniform.
- `meeting-weekend`: one reply, the responder more often away late in the week (weights).
- `meeting-opposed-2`: two replies, the responder's day values opposed to the proposer's
  (value = low + high - proposer's, plus noise): a compromise day can beat the greedy one.
- `fruit-offer`: the shipped fruit-by-offer menu, one reply, exact values.

Nothing here calls a model: it runs in seconds and is a pure function of its seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scipy import stats

COMMAND = "python -m lab tension"
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: P(proposer free on a day) the rational responder discounts a counter by: 1 - E[away]/7
#: under the shipped 1-2 uniform away days.
PROPOSER_FREE = 1 - 1.5 / len(DAYS)
READING_K = 2
#: Fresh value per point of the proposer's own value of its proposed day, measured on the
#: committed meeting row (review science-0832c41, H1: 0.276 for CFR's days, 0.283 for greedy's).
CONVERSION = 0.28


@dataclass(frozen=True)
class Meeting:
    """One player's meeting notes: away days and a value per day."""

    away: frozenset[int]
    values: tuple[int, ...]

    def free(self) -> list[int]:
        return [d for d in range(len(self.values)) if d not in self.away]

    def best_free(self) -> int:
        free = self.free()
        return max(free, key=lambda d: (self.values[d], -d))


def draw_meeting(rng: random.Random, weights: tuple[float, ...] | None = None) -> Meeting:
    """As gtsteer/domains/schedule_meeting.py draws (1-2 away days, values 1..10), with optional
    per-day away weights (sampled without replacement)."""
    n = len(DAYS)
    k = rng.randint(1, 2)
    if weights is None:
        away = set(rng.sample(range(n), k))
    else:
        away = set()
        while len(away) < k:
            left = [d for d in range(n) if d not in away]
            away.add(rng.choices(left, [weights[d] for d in left])[0])
    return Meeting(frozenset(away), tuple(rng.randint(1, 10) for _ in range(n)))


def opposed(rng: random.Random, proposer: Meeting, noise: int = 2) -> Meeting:
    """A responder whose values run against the proposer's (11 - v, plus noise in [-2, 2])."""
    other = draw_meeting(rng)
    values = tuple(min(10, max(1, 11 - v + rng.randint(-noise, noise))) for v in proposer.values)
    return Meeting(other.away, values)


def meeting_payoff(proposer: Meeting, responder: Meeting, day: int | None) -> float:
    """The issue-57 rule: a day pays the proposer its value only when both can attend."""
    if day is None or day in proposer.away or day in responder.away:
        return 0.0
    return float(proposer.values[day])


def meeting_play(replies: int, style: str) -> Callable[[Meeting, Meeting, int], float]:
    """The proposer's payoff when it opens with `day`, under a perfect writer and reader."""

    def play(proposer: Meeting, responder: Meeting, day: int) -> float:
        best = responder.best_free()
        if day in responder.away:
            accept = False
        elif style == "reading-greedy":
            accept = responder.values[day] >= responder.values[best] - READING_K
        elif replies >= 2:
            accept = responder.values[day] >= PROPOSER_FREE * responder.values[best]
        else:
            accept = True  # one reply: a counter is never answered and pays nothing
        if accept:
            return meeting_payoff(proposer, responder, day)
        if replies < 2:
            return 0.0
        return meeting_payoff(proposer, responder, best)  # the proposer takes a counter it can

    return play


# --- fruit by offer (configs/trade_fruit_offer.yaml's menu) ---------------------------------
FRUITS = ("apple", "banana", "blueberry", "kiwi")
#: (the proposer gives, the proposer asks), as the config's eight offers.
MENU: tuple[tuple[dict[str, int], dict[str, int]], ...] = (
    ({"apple": 1}, {"banana": 2}), ({"banana": 2}, {"apple": 1}),
    ({"kiwi": 1}, {"blueberry": 2}), ({"blueberry": 2}, {"kiwi": 1}),
    ({"apple": 1}, {"kiwi": 1}), ({"kiwi": 1}, {"apple": 1}),
    ({"banana": 1}, {"blueberry": 1}), ({"blueberry": 1}, {"banana": 1}),
)


@dataclass(frozen=True)
class Basket:
    owned: dict[str, int]
    values: dict[str, int]

    def can_give(self, fruit: dict[str, int]) -> bool:
        return all(self.owned[f] >= n for f, n in fruit.items())

    def worth(self, gets: dict[str, int], gives: dict[str, int]) -> int:
        return (sum(self.values[f] * n for f, n in gets.items())
                - sum(self.values[f] * n for f, n in gives.items()))


def draw_basket(rng: random.Random) -> Basket:
    """As gtsteer/domains/fruit_trade.py draws: 0..3 of each fruit (at least one), values 1..8."""
    owned = {f: rng.randint(0, 3) for f in FRUITS}
    if not any(owned.values()):
        owned[rng.choice(FRUITS)] = 1
    return Basket(owned, {f: rng.randint(1, 8) for f in FRUITS})


def offer_play(proposer: Basket, responder: Basket, offer: int) -> float:
    """One reply: the responder accepts an offer it can pay for that gains it something."""
    gives, asks = MENU[offer]
    if not (proposer.can_give(gives) and responder.can_give(asks)):
        return 0.0
    if responder.worth(gives, asks) <= 0:
        return 0.0
    return float(proposer.worth(asks, gives))


def offer_greedy(proposer: Basket) -> int:
    """gtsteer/domains/fruit_offer.py's `offer_greedy`: the affordable offer worth most."""
    return max(range(len(MENU)), key=lambda i: (proposer.can_give(MENU[i][0]),
                                                proposer.worth(MENU[i][1], MENU[i][0]), -i))


# --- the candidates -------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    name: str
    describe: str
    draw: Callable[[random.Random], tuple[Any, Any]]
    believe: Callable[[random.Random, Any], Any]  # a responder draw given the proposer's notes
    actions: Callable[[Any], list[int]]
    greedy: Callable[[Any], int]
    play: Callable[[Any, Any, int], float]


WEEKEND = (1.0, 1.0, 1.0, 1.0, 2.0, 6.0, 6.0)


def _meeting(name: str, describe: str, replies: int, style: str,
             weights: tuple[float, ...] | None = None, opposed_values: bool = False) -> Candidate:
    def draw(rng: random.Random) -> tuple[Meeting, Meeting]:
        p = draw_meeting(rng)
        return p, believe(rng, p)

    def believe(rng: random.Random, p: Meeting) -> Meeting:
        return opposed(rng, p) if opposed_values else draw_meeting(rng, weights)

    return Candidate(name, describe, draw, believe, lambda p: p.free(),
                     lambda p: p.best_free(), meeting_play(replies, style))


def candidates(style: str) -> list[Candidate]:
    """The candidate games, with the responder modelled as `style`."""
    return [
        _meeting("meeting", "shipped meeting, 1 reply, away days uniform", 1, style),
        _meeting("meeting-weekend", "1 reply, responder away weights Mon-Thu 1, Fri 2, Sat-Sun 6",
                 1, style, weights=WEEKEND),
        _meeting("meeting-opposed-2", "2 replies, responder's values opposed (11 - v +/- 2)",
                 2, style, opposed_values=True),
        Candidate("fruit-offer", "shipped fruit-by-offer menu, 1 reply", lambda rng: (
            draw_basket(rng), draw_basket(rng)), lambda rng, p: draw_basket(rng),
            lambda p: list(range(len(MENU))), offer_greedy, offer_play),
    ]


@dataclass(frozen=True)
class Shortfall:
    """Greedy's shortfall against the best response, per instance, and what it takes to see."""

    game: str
    responder: str
    describe: str
    greedy: float
    best: float
    diffs: tuple[float, ...]

    @property
    def mean(self) -> float:
        return sum(self.diffs) / len(self.diffs)

    @property
    def sd(self) -> float:
        m = self.mean
        return math.sqrt(sum((d - m) ** 2 for d in self.diffs) / (len(self.diffs) - 1))

    @property
    def differs(self) -> float:
        """Share of instances where the best response is not greedy's opening (payoff aside)."""
        return sum(1 for d in self.diffs if d != 0) / len(self.diffs)


def shortfall(candidate: Candidate, instances: int, belief_draws: int, seed: int,
              style: str) -> Shortfall:
    """Per instance: the best response to the belief (mean over `belief_draws` responders drawn
    from the proposer's point of view), and both openings scored on the true responder."""
    rng = random.Random(f"tension-{candidate.name}-{seed}")
    diffs, greedy_total, best_total = [], 0.0, 0.0
    for _ in range(instances):
        proposer, responder = candidate.draw(rng)
        belief = [candidate.believe(rng, proposer) for _ in range(belief_draws)]
        acts = candidate.actions(proposer)
        g = candidate.greedy(proposer)
        b = max(acts, key=lambda a: (sum(candidate.play(proposer, r, a) for r in belief), a == g))
        gv, bv = candidate.play(proposer, responder, g), candidate.play(proposer, responder, b)
        diffs.append(bv - gv)
        greedy_total += gv
        best_total += bv
    return Shortfall(candidate.name, style, candidate.describe, greedy_total / instances,
                     best_total / instances, tuple(diffs))


def n_for_power(effect: float, sd: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """Instances a two-sided paired t-test needs (normal approximation)."""
    if effect <= 0:
        return math.inf
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return (z * sd / effect) ** 2


def power_at(n: int, effect: float, sd: float, alpha: float = 0.05) -> float:
    """Power of a two-sided paired t-test at n instances (normal approximation)."""
    if sd <= 0:
        return 1.0
    z = stats.norm.ppf(1 - alpha / 2)
    shift = effect / (sd / math.sqrt(n))
    return float(stats.norm.sf(z - shift) + stats.norm.cdf(-z - shift))


def render(rows: list[Shortfall], *, instances: int, belief_draws: int, seed: int,
           planned_n: int, real_sd: dict[str, float]) -> str:
    """The markdown section: one row per (game, responder)."""
    sds = ", ".join(f"{k} {v:.2f}" for k, v in real_sd.items())
    lines = [
        f"Command: `{COMMAND} --instances {instances} --belief-draws {belief_draws} "
        f"--seed {seed} --planned-n {planned_n}`",
        "",
        "Perfect writer and reader, exact payoffs (0 to both on a day either is away). "
        "*shortfall*: best response minus greedy opening, on the true responder, mean and SD "
        "over instances; *differs*: instances where they pay differently. The last two columns "
        f"assume a small model turns {CONVERSION} of a payoff difference into a fresh-sample "
        "difference (the committed meeting row) with the committed paired SD of that domain's "
        f"proposer vs greedy contrast at S = 2 ({sds}).",
        "",
        "| game | responder | greedy | best response | shortfall [95%] | SD | differs "
        "| n for 80% (ideal) | n for 80% (small model) | power at n = " + str(planned_n)
        + " (small model) |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        half = stats.t.ppf(0.975, len(r.diffs) - 1) * r.sd / math.sqrt(len(r.diffs))
        sd_model = real_sd["fruit-offer" if r.game.startswith("fruit") else "meeting"]
        effect_model = CONVERSION * r.mean
        n_ideal, n_model = n_for_power(r.mean, r.sd), n_for_power(effect_model, sd_model)
        lines.append(
            f"| `{r.game}` ({r.describe}) | {r.responder} | {r.greedy:.2f} | {r.best:.2f} "
            f"| {r.mean:+.2f} [{r.mean - half:+.2f}, {r.mean + half:+.2f}] | {r.sd:.2f} "
            f"| {r.differs:.0%} | {_count(n_ideal)} | {_count(n_model)} "
            f"| {power_at(planned_n, effect_model, sd_model):.0%} |"
        )
    return "\n".join(lines)


def _count(n: float) -> str:
    return "never" if math.isinf(n) else f"{math.ceil(n):,}"


SECTION_START, SECTION_END = "<!-- tension:start -->", "<!-- tension:end -->"


def main(argv: list[str] | None = None) -> None:
    from pathlib import Path

    from lab.bench import benchdoc

    parser = benchdoc.parser(COMMAND, __doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--belief-draws", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--planned-n", type=int, default=60)
    parser.add_argument("--doc", type=Path, default=benchdoc.ROOT / "docs" / "TABLE1.md")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = parser.parse_args(argv)
    for name in ("instances", "belief_draws", "planned_n"):
        if getattr(args, name) < 2:
            parser.error(f"--{name.replace('_', '-')} must be at least 2")
    rows = [shortfall(c, args.instances, args.belief_draws, args.seed, style)
            for style in ("rational", "reading-greedy") for c in candidates(style)]
    real_sd = committed_sd(benchdoc.ROOT / "docs" / "data" / "table1")
    body = render(rows, instances=args.instances, belief_draws=args.belief_draws,
                  seed=args.seed, planned_n=args.planned_n, real_sd=real_sd)
    section = f"{SECTION_START}\n{body}\n{SECTION_END}"
    if args.no_write:
        print(section)
        return
    benchdoc.write_section(args.doc, SECTION_START, SECTION_END, section)
    print(f"wrote the tension section of {args.doc}")


def committed_sd(table1: Any) -> dict[str, float]:
    """The paired SD of the proposer's opening vs greedy (others `any`) in the committed rows."""
    import json
    import statistics

    out = {}
    for key, domain in (("meeting", "schedule_meeting_dow"), ("fruit-offer", "trade_fruit_offer")):
        row = json.loads((table1 / domain / "table1_row.json").read_text())["row"]
        values = [v for v in row["per_instance"]["versus_player0_opening_greedy_others_any"]
                  if v is not None]
        out[key] = statistics.stdev(values)
    return out
