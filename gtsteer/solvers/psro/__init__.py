"""PSRO over instructions: meta-game, LLM best-response operators, the loop (library code)."""

from gtsteer.solvers.meta import META_SOLVERS
from gtsteer.solvers.psro.candidates import SYNONYMS, Filtered, canonical, filter_candidates
from gtsteer.solvers.psro.loop import run_psro, solve_meta
from gtsteer.solvers.psro.metagame import (
    GameMap,
    InstanceEntries,
    MetaGame,
    action_ids,
    build_metagame,
    instance_entries,
    one_instruction_each,
    profile_values,
    serial_map,
)
from gtsteer.solvers.psro.oracles import OPERATORS, OracleInput, OracleResult, run_oracle
from gtsteer.solvers.psro.report import (
    CONVERGED,
    NO_CANDIDATE,
    IterationReport,
    PSROConfig,
    PSROResult,
    SolutionReport,
)

__all__ = [
    "CONVERGED",
    "META_SOLVERS",
    "NO_CANDIDATE",
    "OPERATORS",
    "SYNONYMS",
    "Filtered",
    "GameMap",
    "InstanceEntries",
    "IterationReport",
    "MetaGame",
    "OracleInput",
    "OracleResult",
    "PSROConfig",
    "PSROResult",
    "SolutionReport",
    "action_ids",
    "build_metagame",
    "canonical",
    "filter_candidates",
    "instance_entries",
    "one_instruction_each",
    "profile_values",
    "run_oracle",
    "run_psro",
    "serial_map",
    "solve_meta",
]
