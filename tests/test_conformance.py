"""Every config in configs/ passes the conformance check and matches its recorded playthrough.

Parametrized over configs/*.yaml at collection time, so a new domain is checked as soon as its
YAML exists. Record (or, after a deliberate change, re-record) playthroughs with
`python scripts/record_playthroughs.py [configs/x.yaml]`.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from pathlib import Path

import pytest
from binding_support import EchoingFake

from gtsteer.binding.conformance import (
    ConformanceError,
    check_config,
    check_game,
    record_playthrough,
    reduced_spec,
)
from gtsteer.llm import LLM

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
PLAYTHROUGHS = ROOT / "tests" / "data" / "playthroughs"


def test_there_are_configs() -> None:
    assert CONFIGS, "configs/*.yaml is empty"


def _demo_configs() -> list[str]:
    recipe = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    return [w for w in recipe.split() if w.endswith(".yaml")]


def test_the_makefile_demo_config_exists() -> None:
    configs = _demo_configs()
    assert configs and all((ROOT / c).is_file() for c in configs), configs


def test_bench_solve_times_the_makefile_demo() -> None:
    spec = importlib.util.spec_from_file_location("bench_solve", ROOT / "scripts/bench_solve.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert _demo_configs() == [bench.DEMO_CONFIG]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_config_conforms(config: Path) -> None:
    # The echoing test model repeats every instruction, so the stripping is exercised on this
    # domain's own instruction templates.
    report = check_config(config, LLM(backend=EchoingFake()))
    assert report.histories > 1 and report.info_states > 0
    assert report.cfr_backend.startswith("open_spiel C++")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_playthrough_matches_recording(config: Path) -> None:
    recorded = PLAYTHROUGHS / f"{config.stem}.txt"
    command = f"python scripts/record_playthroughs.py configs/{config.name}"
    assert recorded.exists(), f"no recorded playthrough for {config.name}: run `{command}`"
    fresh = record_playthrough(config)
    expected = recorded.read_text(encoding="utf-8")
    if fresh != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), fresh.splitlines(True),
                                            "recorded", "now", n=2))  # fmt: skip
        pytest.fail(f"{config.name} plays differently from its recording (if intended, run "
                    f"`{command}`):\n{diff[:4000]}")  # fmt: skip


def test_the_check_catches_colliding_history_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    from gtsteer.binding import DialogueState, load_spec, make_game, make_instance

    monkeypatch.setattr(DialogueState, "__str__", lambda self: "\n".join(
        t.text for t in self.turns))  # the old, transcript-only string
    spec = load_spec(CONFIGS[0])
    game = make_game(spec, make_instance(spec, 0), "fake")
    with pytest.raises(ConformanceError, match="unique history strings"):
        check_game(game, "x")


def test_the_check_catches_an_unstripped_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    import gtsteer.binding.game as game_module
    from gtsteer.binding import load_spec, make_game, make_instance

    monkeypatch.setattr(game_module, "strip_instruction_echo", lambda text, parts: (text, False))
    spec = load_spec(ROOT / "configs" / "trade_fruit_tone.yaml")
    game = make_game(spec, make_instance(spec, 0), LLM(backend=EchoingFake()))
    with pytest.raises(ConformanceError, match="no instruction echo"):
        check_game(game, "x")


def test_big_configs_are_checked_on_a_smaller_variant() -> None:
    from gtsteer.binding import load_spec

    spec = load_spec(ROOT / "configs" / "trade_fruit_tone.yaml")
    big = spec.model_copy(update={"num_max_replies": 4})
    small, notes = reduced_spec(big, max_leaves=4096)
    assert notes and small.num_llm_seeds == 1
    assert reduced_spec(spec)[1] == []  # the fruit tree (64 leaves) is checked as it is


def test_a_trimmed_variant_keeps_only_its_values_definitions() -> None:
    from gtsteer.binding import load_spec

    spec = load_spec(ROOT / "configs" / "trade_fruit_tone.yaml")
    assert set(spec.instruction_definitions["tone"]) == {"calm", "assertive", "submissive"}
    big = spec.model_copy(update={"num_max_replies": 8})  # 4^16 leaves: actions get trimmed
    small, notes = reduced_spec(big, max_leaves=4096)
    assert "actions -> one value and any per key" in notes
    assert small.actions["tone"] == ["calm", "any"]
    assert small.instruction_definitions == {"tone": {"calm": spec.instruction_definitions[
        "tone"]["calm"]}}


def test_the_check_raises_a_conformance_error_for_a_foreign_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A runtime check, not an `assert` (which `python -O` drops).
    import pyspiel

    from gtsteer.binding import conformance

    monkeypatch.setattr(conformance, "expand_sync", lambda game, progress: type(
        "Report", (), {"failed": False})())
    with pytest.raises(ConformanceError, match="`DialogueState` failed: a .*State in the tree"):
        check_game(pyspiel.load_game("kuhn_poker"), "x")


def test_binding_imports_nothing_above_it() -> None:
    # DESIGN.md: gtsteer/binding may import only gtsteer.llm (and itself), even lazily.
    upward = []
    for path in sorted((ROOT / "gtsteer" / "binding").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            upward += [f"{path.name}: {n}" for n in names if n.startswith("gtsteer.")
                       and n.split(".")[1] not in ("binding", "llm")]
    assert upward == []
