"""Cross-check gtsteer's equilibria with Gambit (pygambit), a solver nobody here wrote.

For each config: `gtsteer solve` (CFR+) and `gtsteer export --format efg` of instance 0, then
in pygambit on the exported file:
- gtsteer's CFR+ policy as a Gambit behaviour profile; its NashConv by Gambit: each player's
  best-response value (Gambit's sequence-form `lcp_solve` on the file with the other player's
  decision nodes turned into chance nodes playing the policy, `fixed_opponents_efg`) minus its
  payoff (`MixedBehaviorProfile.payoff`), summed; where the reduced strategic form is small, also
  the sum of Gambit's `MixedStrategyProfile.player_regret`;
- an exact equilibrium (`lcp_solve` on the sequence form, rationals unless --float), its
  payoffs against OpenSpiel's values of it and gtsteer's CFR+ values (zero-sum: the value is
  unique, so |difference| <= gtsteer's NashConv), and OpenSpiel's NashConv of it (0).
pygambit is in the test extra (`pip install -e '.[test]'`).

    python -m lab gambit-check [--llm fake] [--float] [gtsteer/configs/*.yaml]

prints one markdown table row per config (docs/SOLVE.md, "Cross-check with Gambit").
"""

from __future__ import annotations

import io
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyspiel

import gtsteer
from gtsteer.llm.extras import require
from gtsteer.solvers.cfr import PolicyTable, to_pyspiel_policy
from gtsteer.solvers.efg import EfgMap, policy_to_efg
from gtsteer.solvers.metrics import nash_conv
from lab.bench import benchdoc
from lab.bench.benchdoc import ROOT

#: How to run this (the usage line, and the command its docs section names).
COMMAND = "python -m lab gambit-check"

#: Reduced pure strategies (all players) past which the strategic-form regret is skipped (each
#: strategy's value is a walk of the tree); the best-response NashConv has no such limit.
MAX_STRATEGIES = 20_000


@dataclass
class GambitCheck:
    """What Gambit says about one exported game and gtsteer's policy on it."""

    strategies: list[int]
    #: Gambit's NashConv of gtsteer's policy: the sum of `regrets`, each player's
    #: best-response value (`best_response_value`) minus its payoff (`profile.payoff`).
    nash_conv: float
    regrets: list[float]
    #: The same sum from Gambit's `player_regret` on the reduced strategic form (None when
    #: the players have more than MAX_STRATEGIES reduced strategies in all).
    nash_conv_strategic: float | None
    #: The payoffs of the exact equilibrium Gambit's `lcp_solve` found.
    equilibrium_payoffs: list[Fraction]
    #: OpenSpiel's values and NashConv of that equilibrium on the same file.
    equilibrium_values: list[float]
    equilibrium_nash_conv: float
    seconds: float


def _gambit() -> Any:
    """pygambit, the `gambit` extra (one line naming it when it is missing)."""
    require("pygambit", "gambit", "The Gambit cross-check (python -m lab gambit-check)")
    import pygambit

    return pygambit


def behaviour_profile(game: Any, efg_map: EfgMap, table: PolicyTable) -> Any:
    """gtsteer's policy (information state -> [(action id, p)]) as a Gambit behaviour profile
    (floats), matched by the side file's information-set and action labels."""
    by_label = {(s.player, s.label): s for s in efg_map.infosets}
    profile = game.mixed_behavior_profile()
    for p, player in enumerate(game.players):
        for infoset in player.infosets:
            source = by_label[(p, infoset.label)]
            probs = dict(table[source.info_state])
            ids = {a.label: a.action for a in source.actions}
            for action in infoset.actions:
                profile[action] = float(probs.get(ids[action.label], 0.0))
    return profile


def profile_to_table(profile: Any, game: Any, efg_map: EfgMap) -> PolicyTable:
    """A Gambit behaviour profile as gtsteer's policy table, through the side file."""
    by_label = {(s.player, s.label): s for s in efg_map.infosets}
    out: PolicyTable = {}
    for p, player in enumerate(game.players):
        for infoset in player.infosets:
            source = by_label[(p, infoset.label)]
            ids = {a.label: a.action for a in source.actions}
            probs = [min(1.0, max(0.0, float(profile[a]))) for a in infoset.actions]
            total = sum(probs)  # a float solve can leave 1 + 1e-16 or -1e-17
            if total <= 0.0:  # a set the equilibrium never reaches: any play will do
                probs, total = [1.0] * len(probs), float(len(probs))
            probs = [p / total for p in probs]
            out[source.info_state] = [(ids[a.label], p) for a, p in zip(infoset.actions, probs,
                                                                        strict=True)]
    return out


#: A decision-node line of gtsteer's .efg files (`gtsteer.solvers.efg`: one node per line).
_DECISION = re.compile(r'^(\s*)p "" (\d+) (\d+) "([^"]*)" \{ (.*) \} 0$')


def fixed_opponents_efg(text: str, efg_map: EfgMap, policy: PolicyTable, player: int) -> str:
    """The .efg text with every other player's decision node turned into a chance node that
    plays `policy` there (exact rationals: Gambit sums each to exactly one), so `player`
    alone decides. Each new chance node gets its own information-set number."""
    by_label = {(s.player, s.label): s for s in efg_map.infosets}
    number = efg_map.chance_nodes
    out = []
    for line in text.splitlines():
        match = _DECISION.match(line)
        if match is None or int(match.group(2)) - 1 == player:
            out.append(line)
            continue
        pad, owner, _, name, body = match.groups()
        source = by_label[(int(owner) - 1, name)]
        probs = dict(policy[source.info_state])
        ids = {a.label: a.action for a in source.actions}
        labels = re.findall(r'"([^"]*)"', body)
        exact = [Fraction(float(probs.get(ids[lab], 0.0))) for lab in labels]
        total = sum(exact)
        number += 1
        outcomes = " ".join(f'"{lab}" {x / total}' for lab, x in zip(labels, exact, strict=True))
        out.append(f'{pad}c "" {number} "" {{ {outcomes} }} 0')
    return "\n".join(out) + "\n"


def best_response_value(efg_path: Path, efg_map: EfgMap, policy: PolicyTable,
                        player: int) -> float:
    """`player`'s best-response value against the others' part of `policy`, by Gambit's
    sequence-form `lcp_solve` on `fixed_opponents_efg` (a decision problem of `player`
    alone; no strategic form, so any tree size here)."""
    text = fixed_opponents_efg(efg_path.read_text(), efg_map, policy, player)
    gbt = _gambit()
    game = gbt.read_efg(io.StringIO(text))
    eq = gbt.nash.lcp_solve(game, rational=False).equilibria[0]
    return float(eq.payoff(list(game.players)[player]))


def check(efg_path: Path, efg_map: EfgMap, policy: PolicyTable, *,
          rational: bool = True, equilibrium: bool = True) -> GambitCheck:
    """Gambit's regret of `policy` and an exact equilibrium of the exported game.

    The equilibrium comes from `lcp_solve` on the sequence form for every game: its zero-sum
    sibling `lp_solve` (16.7.0) returned, on the court config with the fake model, a profile
    whose first information set has all-zero probabilities and payoffs 0/0 where the value is
    -1/+1 (docs/SOLVE.md). `equilibrium` False skips it (the 2-player LCP takes minutes on
    the interrogation tree): then the equilibrium fields are empty and NaN."""
    start = time.perf_counter()
    gbt = _gambit()
    game = gbt.read_efg(str(efg_path))
    players = list(game.players)
    profile = behaviour_profile(game, efg_map, policy)
    payoffs = [float(profile.payoff(pl)) for pl in players]
    regrets = [best_response_value(efg_path, efg_map, policy, p) - payoffs[p]
               for p in range(len(players))]
    strategies = [int(n) for n in efg_map.reduced_strategies]
    strategic = None
    if sum(strategies) <= MAX_STRATEGIES:  # the reduced strategic form: Gambit's player_regret
        mixed = profile.as_strategy()
        strategic = float(sum(mixed.player_regret(pl) for pl in players))
    if not equilibrium:
        return GambitCheck(strategies, float(sum(regrets)), regrets, strategic, [], [],
                           float("nan"), time.perf_counter() - start)
    eq = gbt.nash.lcp_solve(game, rational=rational).equilibria[0]
    eq_payoffs = [Fraction(str(eq.payoff(pl))) for pl in players]
    loaded = pyspiel.load_game("efg_game", {"filename": str(efg_path)})
    eq_table = policy_to_efg(loaded, efg_map, profile_to_table(eq, game, efg_map))
    eq_values = [float(v) for v in pyspiel.expected_returns(
        loaded.new_initial_state(), to_pyspiel_policy(eq_table), -1, True)]
    return GambitCheck(strategies, float(sum(regrets)), regrets, strategic, eq_payoffs,
                       eq_values, nash_conv(loaded, eq_table), time.perf_counter() - start)


def openspiel_gains(efg_path: Path, efg_map: EfgMap, policy: PolicyTable) -> list[float]:
    """Each player's best-response gain against `policy` (OpenSpiel, on the file)."""
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability

    loaded = pyspiel.load_game("efg_game", {"filename": str(efg_path)})
    table = policy_to_efg(loaded, efg_map, policy)
    tab = policy_lib.TabularPolicy(loaded)
    for key, probs in table.items():
        row = tab.state_lookup[key]
        for a, p in probs:
            tab.action_probability_array[row][a] = p
    return list(exploitability.nash_conv(loaded, tab, return_only_nash_conv=False)
                .player_improvements)


def run(config: Path, llm: str, tmp: Path, rational: bool = True) -> dict[str, Any]:
    solved = gtsteer.solve(config, llm=llm, out=tmp / "solve", quiet=True)
    exported = gtsteer.export(config, llm=llm, out=tmp / "export", quiet=True)
    record = json.loads((tmp / "solve" / "games" / "0.json").read_text())
    game = exported.games[0]
    efg_map = EfgMap.model_validate_json((tmp / "export" / str(game.side_file)).read_text())
    by_state = efg_map.by_info_state()
    policy: PolicyTable = {}
    for row in record["policy"]:
        ids = {a.name: a.action for a in by_state[row["info_state"]].actions}
        policy[row["info_state"]] = [(ids[k], p) for k, p in row["probs"].items()]
    efg_path = tmp / "export" / str(game.efg)
    zero_sum = pyspiel.load_game("efg_game", {"filename": str(efg_path)}).get_type().utility \
        == pyspiel.GameType.Utility.ZERO_SUM
    result = check(efg_path, efg_map, policy, rational=rational)
    gains = openspiel_gains(efg_path, efg_map, policy)
    return {"config": config.stem, "zero_sum": zero_sum, "infosets": game.infosets,
            "terminals": game.terminals, "nash_conv": record["values"]["nash_conv"],
            "max_gain": max(gains), "value_cfr": record["values"]["value_cfr"],
            "new_calls": exported.llm_calls.new_calls, "iterations": solved.iterations,
            "gambit": result}


def _pair(xs: Any) -> str:
    return " / ".join(f"{float(x):+.6f}" for x in xs)


def row(r: dict[str, Any]) -> str:
    g: GambitCheck = r["gambit"]
    strategic = "too big" if g.nash_conv_strategic is None else f"{g.nash_conv_strategic:.3e}"
    return (f"| {r['config']} | {'yes' if r['zero_sum'] else 'no'} |"
            f" {'/'.join(map(str, r['infosets']))} | {r['terminals']} |"
            f" {' x '.join(f'{n:.3g}' if n > 10**6 else str(n) for n in g.strategies)} |"
            f" {r['nash_conv']:.6e} | {g.nash_conv:.6e} | {strategic} |"
            f" {_pair(g.equilibrium_payoffs)} | {_pair(g.equilibrium_values)} |"
            f" {g.equilibrium_nash_conv:.1e} | {_pair(r['value_cfr'])} | {g.seconds:.1f} |")


HEADER = ("| config | zero-sum file | information sets | terminals | reduced strategies |"
          " NashConv, gtsteer | NashConv, Gambit best responses | NashConv, Gambit strategic"
          " form | Gambit `lcp_solve` equilibrium payoffs | OpenSpiel values of it |"
          " OpenSpiel NashConv of it | gtsteer CFR+ values | Gambit s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    parser = benchdoc.parser(COMMAND, __doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--llm", default="fake")
    parser.add_argument("--float", action="store_true", help="lcp_solve in floats, not rationals")
    args = parser.parse_args(argv)
    configs = args.configs or sorted((ROOT / "gtsteer" / "configs").glob("*.yaml"))
    print(HEADER)
    for config in configs:
        with tempfile.TemporaryDirectory() as tmp:
            print(row(run(config, args.llm, Path(tmp), rational=not args.float)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
