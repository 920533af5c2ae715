"""Verdict games (arXiv 2501.18455): court, interrogation and the Turing test.

Two players alternate messages; after every round a fixed judge (`spec.judge`, a classifier
built on `LLM.choose`) answers a verdict or "continue", and must give a verdict after the last
round. Payoffs come from a table in `params.utilities`, indexed by the verdict and, in the
Bayesian games, by the private type of `params.typed_player` (dealt with the instance):

    params:
      questioner: 0             # the player whose win rate `gtsteer eval verdict` reports
      target_verdict: guilty    # the verdict the strategic questioner pushes for
      typed_player: 1           # only with types: who holds one
      types: [Guilty, Non-Guilty]
      utilities:                # [type ->] verdict -> one payoff per player
        Guilty: {guilty: [1, 0], not guilty: [0, 1]}
        Non-Guilty: {guilty: [0, 0], not guilty: [1, 1]}

The check below makes the table agree with the judge's labels, the types and the payoff bounds
at load time.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, Field

from gtsteer.binding.domain import DomainParams
from gtsteer.binding.domain_checks import DomainCheckError
from gtsteer.binding.instances import Instance
from gtsteer.binding.reward import RewardContext
from gtsteer.binding.spec import DomainSpec

DOMAIN = "verdict_game"
ROLE, TYPE = "role", "type"


class VerdictParams(DomainParams):
    """`params` of a verdict game as written; `verdict_table` checks them against the judge,
    the players and the payoff bounds."""

    questioner: int = 0
    #: Default: the judge's first verdict.
    target_verdict: str | None = None
    typed_player: int | None = None
    types: list[str] = Field(default_factory=list)
    #: [type ->] verdict -> one payoff per player.
    utilities: dict[str, Any]


class VerdictTable(BaseModel):
    """The parsed verdict-game parameters of a spec."""

    questioner: int
    target_verdict: str
    typed_player: int | None
    types: list[str]
    #: type -> verdict -> payoffs; an untyped game uses the single type "" .
    utilities: dict[str, dict[str, list[float]]]

    def payoffs(self, verdict: str, player_type: str | None = None) -> list[float]:
        return list(self.utilities[player_type or ""][verdict])

    def win_value(self) -> float:
        """The questioner's best payoff in the table: reaching it counts as a win."""
        return max(v[self.questioner] for row in self.utilities.values() for v in row.values())

    def type_of(self, private_info: list[dict[str, str]]) -> str | None:
        return None if self.typed_player is None else private_info[self.typed_player][TYPE]


def verdict_table(spec: DomainSpec) -> VerdictTable:
    """The table of `spec`, validated; `DomainCheckError` names the offending field."""
    if spec.judge is None:
        raise DomainCheckError("judge", "a verdict game needs a `judge`")
    verdicts = list(spec.judge.verdicts)
    p = VerdictParams.of(spec)
    n = spec.num_players
    questioner = p.questioner
    if not 0 <= questioner < n:
        raise DomainCheckError("params.questioner", f"expected a player index, got {questioner!r}")
    types = p.types
    typed = p.typed_player
    if types:
        if len(set(types)) != len(types) or len(types) < 2:
            raise DomainCheckError("params.types", f"expected 2+ distinct types, got {types!r}")
        if typed is None or not 0 <= typed < n:
            raise DomainCheckError("params.typed_player", f"expected a player index, got {typed!r}")
    elif typed is not None:
        raise DomainCheckError("params.typed_player", "given without params.types")
    raw = p.utilities
    rows = raw if types else {"": raw}
    if types and sorted(rows) != sorted(types):
        raise DomainCheckError(
            "params.utilities", f"rows {sorted(rows)} do not match params.types {sorted(types)}"
        )
    table: dict[str, dict[str, list[float]]] = {}
    for row_type, row in rows.items():
        where = f"params.utilities.{row_type}" if row_type else "params.utilities"
        if not isinstance(row, dict) or sorted(row) != sorted(verdicts):
            got = sorted(row) if isinstance(row, dict) else row
            raise DomainCheckError(where, f"verdicts {got} do not match judge.verdicts {verdicts}")
        table[row_type] = {}
        for verdict, values in row.items():
            if not isinstance(values, list) or len(values) != n or not all(
                isinstance(v, int | float) for v in values
            ):
                raise DomainCheckError(
                    f"{where}.{verdict}", f"expected {n} payoffs (one per player), got {values!r}"
                )
            if any(not spec.payoff.min <= v <= spec.payoff.max for v in values):
                raise DomainCheckError(
                    f"{where}.{verdict}",
                    f"{values} leaves payoff bounds [{spec.payoff.min}, {spec.payoff.max}]",
                )
            table[row_type][verdict] = [float(v) for v in values]
    target = verdicts[0] if p.target_verdict is None else p.target_verdict
    if target not in verdicts:
        raise DomainCheckError(
            "params.target_verdict", f"{target!r} is not one of judge.verdicts {verdicts}"
        )
    return VerdictTable(
        questioner=questioner, target_verdict=target, typed_player=typed if types else None,
        types=list(types), utilities=table,
    )


def check_verdict_game(spec: DomainSpec) -> None:
    table = verdict_table(spec)
    if table.types and spec.num_deals > 1 and spec.num_deals % len(table.types):
        raise DomainCheckError(
            "num_deals",
            f"{spec.num_deals} deals cannot hold each of the {len(table.types)} types"
            f" {table.types} equally often; use a multiple of {len(table.types)} (or 1)",
        )


def verdict_private_info(
    spec: DomainSpec, rng: random.Random, player: int, names: list[str]
) -> dict[str, str]:
    """Each player's role; the typed player also gets its type, drawn uniformly (by chance)."""
    info = {ROLE: spec.players[player]}
    params = VerdictParams.of(spec)
    if params.types and player == params.typed_player:
        info[TYPE] = rng.choice(params.types)
    return info


def verdict_deal(spec: DomainSpec, first: Instance, j: int) -> list[dict[str, str]]:
    """Deal j of a dealt typed game: deal 0's type moved on j places in `params.types`, so the
    deals hold every type equally often and each instance has the same uniform prior (drawing
    each deal's type would give some instances no hidden type at all)."""
    private = [dict(info) for info in first.private_info]
    table = verdict_table(spec)
    if table.typed_player is not None:
        start = table.types.index(private[table.typed_player][TYPE])
        private[table.typed_player][TYPE] = table.types[(start + j) % len(table.types)]
    return private


def check_verdict_instance(spec: DomainSpec, instance: Instance) -> None:
    """Each player keeps its role; only the typed player holds a type, one of the table's."""
    table = verdict_table(spec)
    for p, info in enumerate(instance.private_info):
        if info.get(ROLE) != spec.players[p]:
            raise DomainCheckError(f"private_info.{p}.{ROLE}", f"must be {spec.players[p]!r}")
        if p == table.typed_player and info.get(TYPE) not in table.types:
            raise DomainCheckError(f"private_info.{p}.{TYPE}", f"must be one of {table.types}")


def verdict_features(spec: DomainSpec, info: dict[str, str]) -> list[float]:
    """One-hot of the own type over params.types (all 0 for an untyped player or game)."""
    return [float(info.get(TYPE) == t) for t in VerdictParams.of(spec).types]


async def verdict_utility(ctx: RewardContext) -> list[float]:
    if ctx.verdict is None:
        raise ValueError("a verdict game ended without a verdict (is `judge` set?)")
    table = verdict_table(ctx.spec)
    return table.payoffs(ctx.verdict, table.type_of(ctx.instance.private_info))
