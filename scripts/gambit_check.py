"""Cross-check gtsteer's equilibria with Gambit (pygambit), a solver nobody here wrote.

For each config: `gtsteer solve` (CFR+) and `gtsteer export --format efg` of instance 0, then
in pygambit on the exported file:
- gtsteer's CFR+ policy as a behaviour profile; its NashConv by Gambit's own regret (the
  sum over players of `MixedStrategyProfile.player_regret`, on the reduced strategic form)
  and `max_regret`, against gtsteer's (OpenSpiel's) NashConv and largest player gain;
- an exact equilibrium (`lp_solve` for zero-sum configs, `lcp_solve` otherwise, on the
  sequence form, in rationals), its value against gtsteer's CFR+ value (zero-sum: the value
  is unique, so |difference| <= gtsteer's NashConv), and OpenSpiel's NashConv of Gambit's
  equilibrium (0 up to float).
A tree whose players have more than `MAX_STRATEGIES` reduced pure strategies in all is too
big for the strategic-form regret and is reported as such. pygambit is in the test extra
(`pip install -e '.[test]'`).

    python scripts/gambit_check.py [--llm fake] [configs/*.yaml]

prints one markdown table row per config (docs/SOLVE.md, "Cross-check with Gambit").
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pygambit as gbt
import pyspiel

from gtsteer.runs.export import export_config
from gtsteer.runs.solve import solve_config
from gtsteer.solvers.cfr import PolicyTable
from gtsteer.solvers.efg import EfgMap, policy_to_efg
from gtsteer.solvers.metrics import nash_conv

ROOT = Path(__file__).resolve().parents[1]
#: Reduced pure strategies (all players) past which Gambit's strategic-form regret is skipped:
#: each strategy's value is a walk of the tree.
MAX_STRATEGIES = 20_000


@dataclass
class GambitCheck:
    """What Gambit says about one exported game and gtsteer's policy on it."""

    strategies: list[int]
    #: Gambit's NashConv of gtsteer's policy (None when the strategic form is too big).
    nash_conv: float | None
    max_regret: float | None
    #: The exact equilibrium Gambit found: its payoffs (rational) and how it was found.
    method: str
    equilibrium_payoffs: list[Fraction]
    #: OpenSpiel's NashConv of Gambit's equilibrium on the same file.
    equilibrium_nash_conv: float
    seconds: float


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
            out[source.info_state] = [(ids[a.label], float(profile[a])) for a in infoset.actions]
    return out


def check(efg_path: Path, efg_map: EfgMap, policy: PolicyTable, zero_sum: bool) -> GambitCheck:
    """Gambit's regret of `policy` and an exact equilibrium of the exported game."""
    start = time.perf_counter()
    game = gbt.read_efg(str(efg_path))
    strategies = [int(n) for n in efg_map.reduced_strategies]
    conv = regret = None
    if sum(strategies) <= MAX_STRATEGIES:
        profile = behaviour_profile(game, efg_map, policy)
        mixed = profile.as_strategy()
        conv = float(sum(mixed.player_regret(pl) for pl in game.players))
        regret = float(profile.max_regret())
    solved = (gbt.nash.lp_solve if zero_sum else gbt.nash.lcp_solve)(game, rational=True)
    eq = solved.equilibria[0]
    payoffs = [Fraction(str(eq.payoff(pl))) for pl in game.players]
    loaded = pyspiel.load_game("efg_game", {"filename": str(efg_path)})
    eq_conv = nash_conv(loaded, policy_to_efg(loaded, efg_map,
                                               profile_to_table(eq, game, efg_map)))
    return GambitCheck(strategies, conv, regret, "lp" if zero_sum else "lcp", payoffs, eq_conv,
                       time.perf_counter() - start)


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


def run(config: Path, llm: str, tmp: Path) -> dict[str, Any]:
    solved = solve_config(config, llm, games=1, out_dir=tmp / "solve", progress=False)
    exported = export_config(config, llm, games=1, out_dir=tmp / "export", progress=False)
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
    result = check(efg_path, efg_map, policy, zero_sum)
    gains = openspiel_gains(efg_path, efg_map, policy)
    return {"config": config.stem, "zero_sum": zero_sum, "infosets": game.infosets,
            "terminals": game.terminals, "nash_conv": record["values"]["nash_conv"],
            "max_gain": max(gains), "value_cfr": record["values"]["value_cfr"],
            "new_calls": exported.llm_calls.new_calls, "iterations": solved.iterations,
            "gambit": result}


def row(r: dict[str, Any]) -> str:
    g: GambitCheck = r["gambit"]
    eq = " / ".join(f"{float(x):+.6f}" for x in g.equilibrium_payoffs)
    cfr = " / ".join(f"{x:+.6f}" for x in r["value_cfr"])
    conv = "too big" if g.nash_conv is None else f"{g.nash_conv:.3e}"
    return (f"| {r['config']} | {'/'.join(map(str, r['infosets']))} | {r['terminals']} |"
            f" {' x '.join(map(str, g.strategies))} | {r['nash_conv']:.3e} | {conv} |"
            f" {g.method}: {eq} | {cfr} | {g.equilibrium_nash_conv:.1e} | {g.seconds:.1f} |")


HEADER = ("| config | information sets | terminals | reduced strategies | NashConv (gtsteer) |"
          " NashConv (Gambit regret) | Gambit exact equilibrium payoffs | gtsteer CFR+ values |"
          " OpenSpiel NashConv of Gambit's equilibrium | Gambit s |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--llm", default="fake")
    args = parser.parse_args(argv)
    configs = args.configs or sorted((ROOT / "configs").glob("*.yaml"))
    print(HEADER)
    for config in configs:
        with tempfile.TemporaryDirectory() as tmp:
            print(row(run(config, args.llm, Path(tmp))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
