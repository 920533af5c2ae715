"""Solve, export and reload one config: what the efg and Gambit tests share.

Not a test module; imported by tests/solvers/test_efg_export.py and
tests/solvers/test_gambit_crosscheck.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyspiel
from solve_helpers import ConstantBackend

import gtsteer
from gtsteer.llm import LLM
from gtsteer.runs.export import ExportSummary
from gtsteer.runs.solve import SolveSummary
from gtsteer.solvers.cfr import PolicyTable
from gtsteer.solvers.efg import EfgMap

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "gtsteer" / "configs").glob("*.yaml"))


@dataclass
class Exported:
    """A solved instance, its export, and gtsteer's record of it."""

    solve: SolveSummary
    export: ExportSummary
    record: dict
    efg_path: Path
    efg_map: EfgMap

    def policy(self) -> PolicyTable:
        """gtsteer's CFR policy of the record (labels -> the game's action ids)."""
        out: PolicyTable = {}
        for row in self.record["policy"]:
            infoset = self.efg_map.by_info_state()[row["info_state"]]
            ids = {a.name: a.action for a in infoset.actions}
            out[row["info_state"]] = [(ids[lab], p) for lab, p in row["probs"].items()]
        return out

    def load(self) -> pyspiel.Game:
        return pyspiel.load_game("efg_game", {"filename": str(self.efg_path)})


def constant_llm() -> LLM:
    """Every message is the same sentence (tests/solve_helpers.py): in the mixed_2x2 config
    the responder then cannot see the proposer's instruction, a known simultaneous game."""
    return LLM(backend=ConstantBackend())


def solve_and_export(config: Path, tmp: Path, llm: object = "fake", *, iterations: int = 1000,
                     deals: int | None = None) -> Exported:
    solved = gtsteer.solve(config, llm=llm, games=1, iterations=iterations, out=tmp / "solve",
                           deals=deals, quiet=True)  # type: ignore[arg-type]
    exported = gtsteer.export(config, llm=llm, games=1, out=tmp / "export", deals=deals,
                              quiet=True)  # type: ignore[arg-type]
    record = json.loads((tmp / "solve" / "games" / "0.json").read_text())
    game = exported.games[0]
    assert game.status == "exported", game.failure
    side = json.loads((tmp / "export" / str(game.side_file)).read_text())
    return Exported(solved, exported, record, tmp / "export" / str(game.efg),
                    EfgMap.model_validate(side))
