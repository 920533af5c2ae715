"""The package-root Python API (issue 59, item 5): `gtsteer.solve/psro/imitate/export`, the
names a user imports from `gtsteer`, and solver helpers that compose with the CLI's defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from solve_helpers import MIXED_2X2, ConstantBackend

import gtsteer
from gtsteer.llm import Backend
from gtsteer.llm.types import GenerationRequest, RawCompletion, Usage

ROOT = Path(__file__).resolve().parents[2]
#: Five lines a user writes from an empty folder.
SCRIPT = """\
import gtsteer
r = gtsteer.solve("schedule_meeting_dow", llm="fake", games=1, quiet=True)
m = r.metrics.nash_conv
print(r.folder, m.mean, m.n, r.usage.requests, len(r.policies()[0]))
"""


def test_a_five_line_script_solves_a_shipped_config_from_an_empty_folder(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GTSTEER_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    folder, conv, n, requests, policy = out.stdout.split()
    assert Path(folder) == Path("results") / "schedule_meeting_dow-fake-0"  # the CLI's default
    assert (tmp_path / folder / "summary.json").is_file()
    assert float(conv) >= 0 and int(n) == 1 and int(requests) > 0 and int(policy) > 0


class Shouty(Backend):
    """A user's own backend, defined here and registered nowhere."""

    kind = "shouty"

    def __init__(self) -> None:
        super().__init__("shouty-1")
        self.calls = 0

    async def complete(self, request: GenerationRequest,
                       json_schema: dict[str, Any] | None = None) -> RawCompletion:
        self.calls += 1
        return RawCompletion(text="I CHOOSE.", usage=Usage(completion_tokens=3))


def test_llm_takes_a_users_backend_object(tmp_path: Path) -> None:
    backend = Shouty()
    r = gtsteer.solve(MIXED_2X2, llm=backend, games=1, iterations=50, out=tmp_path / "o",
                      quiet=True)
    assert backend.calls > 0
    assert r.model == "shouty-1" and r.roles["writer"].source == "given"
    assert r.folder == tmp_path / "o" and r.metrics is not None
    assert r.usage.new_calls == r.llm_calls.new_calls > 0


def test_llm_takes_a_model_string_or_an_llm(tmp_path: Path) -> None:
    by_name = gtsteer.solve(MIXED_2X2, llm="fake", iterations=20, out=tmp_path / "a", quiet=True)
    by_client = gtsteer.solve(MIXED_2X2, llm=gtsteer.LLM("fake"), iterations=20,
                              out=tmp_path / "b", quiet=True)
    assert by_name.metrics == by_client.metrics and by_name.model == by_client.model == "fake"
    # a client built before the run counts on its own meter, which the result adds
    assert by_client.usage.requests == by_name.usage.requests > 0
    assert (by_name.usage.new_calls, by_client.usage.new_calls) == (by_name.usage.requests, 0)


def test_a_budget_stops_the_run_and_what_finished_is_cached(tmp_path: Path) -> None:
    from gtsteer.llm.session import BudgetExceeded

    backend = Shouty()
    with pytest.raises(BudgetExceeded, match="--max-calls 3"):
        gtsteer.solve(MIXED_2X2, llm=backend, games=2, max_calls=3, out=tmp_path, quiet=True)
    assert 3 <= backend.calls <= 3 + 16  # at most the calls already in flight finish


def test_solve_takes_a_domain_spec_and_the_cli_defaults(tmp_path: Path) -> None:
    from gtsteer.domains import load_spec

    r = gtsteer.solve(load_spec(MIXED_2X2), llm=ConstantBackend(), out=tmp_path, quiet=True)
    assert (r.solver, r.iterations, r.num_games, r.seed) == ("cfr+", 1000, 1, 0)
    # the known mixed equilibrium of MIXED_2X2, found with the CLI's defaults
    first = {d.player: d.probs for d in r.instruction_distribution}
    assert first[0]["a"] == pytest.approx(1 / 3, abs=0.02)


def test_a_bad_llm_names_the_argument(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="llm: expected a model string, a gtsteer.LLM or a"):
        gtsteer.solve(MIXED_2X2, llm=42, out=tmp_path, quiet=True)  # type: ignore[arg-type]


def test_psro_export_and_imitate_on_the_fake_model(tmp_path: Path) -> None:
    p = gtsteer.psro("trade_fruit_tone", llm="fake", iterations=1, candidates=1, out=tmp_path / "p",
                     quiet=True)
    assert len(p.iterations) == 2 and p.folder == tmp_path / "p" and p.usage.requests > 0
    e = gtsteer.export(MIXED_2X2, llm="fake", games=2, out=tmp_path / "e", quiet=True)
    assert [g.status for g in e.games] == ["exported", "exported"]
    assert (e.folder / str(e.games[0].efg)).is_file()


def test_imitate_on_the_fake_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    r = gtsteer.imitate(MIXED_2X2, llm="fake", games=3, holdout=1, steps=60, out=tmp_path,
                        iterations=50, quiet=True)
    assert r.folder == tmp_path and r.heldout.nash_conv.n >= 1 and r.usage is not None


def test_the_package_root_names() -> None:
    from gtsteer.binding import Domain
    from gtsteer.llm import LLM

    assert gtsteer.LLM is LLM and gtsteer.Domain is Domain
    assert callable(gtsteer.load_game) and callable(gtsteer.solve)
    assert {"solve", "psro", "imitate", "export", "LLM", "Domain", "load_game", "Advisor",
            "__version__"} <= set(gtsteer.__all__)


def test_import_gtsteer_stays_light() -> None:
    code = ("import sys, gtsteer; heavy = [m for m in ('gtsteer.runs', 'torch', 'litellm',"
            " 'llama_cpp', 'gtsteer.imitation') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


def test_nash_conv_takes_what_solve_cfr_returns() -> None:
    from gtsteer.domains import load_game
    from gtsteer.solvers import nash_conv, solve_cfr

    game = load_game(MIXED_2X2, llm=gtsteer.LLM(backend=ConstantBackend()))
    result = solve_cfr(game)
    assert result.solver == "cfr+" and result.iterations == 1000  # the CLI's defaults
    assert nash_conv(game, result) == pytest.approx(nash_conv(game, result.policy))
    assert nash_conv(game, result) < 1e-2
