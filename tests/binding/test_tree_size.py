"""The game-size guard: the worst-case tree is counted from the spec before any LLM call,
printed, and a run past the bound is refused unless `--max-calls` raises it (issue 27, 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import solve_helpers  # noqa: F401  (registers the test utility in this process)
import yaml
from solve_helpers import MIXED_2X2, ConstantBackend
from typer.testing import CliRunner

from gtsteer.binding import expand_sync, generate_instances, make_game
from gtsteer.binding.tree_size import short, tree_size
from gtsteer.cli import app
from gtsteer.domains import load_spec
from gtsteer.llm import LLM
from gtsteer.runs.solve import DEFAULT_MAX_CALLS, tree_bound

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def variant(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load(MIXED_2X2.read_text())
    data.update(changes)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("changes", [
    {},
    {"num_max_replies": 2, "num_llm_seeds": 1},
    {"num_deals": 2},
])
def test_the_estimate_is_what_expansion_visits_and_asks(tmp_path: Path, changes: dict) -> None:
    spec = load_spec(variant(tmp_path, **changes))
    game = make_game(spec, generate_instances(spec, 1, 0)[0], LLM(backend=ConstantBackend()))
    report = expand_sync(game, progress=False)
    size = tree_size(spec)
    assert (size.decision_nodes, size.chance_nodes, size.terminal_nodes) == (
        report.decision_nodes, report.chance_nodes, report.terminal_nodes)
    assert (size.message_calls, size.end_check_calls, size.reward_calls) == (
        report.message_requests, report.termination_requests, report.reward_requests)


def test_with_end_checks_the_estimate_is_an_upper_bound(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml").read_text())
    data["termination_prompt"] = "{scenario}\n{transcript}\nIs the trade settled?"
    path = tmp_path / "fruit_end.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = load_spec(path)
    game = make_game(spec, generate_instances(spec, 1, 0)[0], LLM("fake"))
    report = expand_sync(game, progress=False)
    size = tree_size(spec)
    actions = len(spec.instructions())
    assert not report.failed and report.termination_requests > 0
    assert size.end_check_calls == actions * 2  # after the first message, not the last
    assert size.message_calls >= report.message_requests
    assert size.end_check_calls >= report.termination_requests
    assert size.nodes >= report.decision_nodes + report.chance_nodes + report.terminal_nodes
    assert size.reward_calls >= report.reward_requests


def test_the_reviewers_exploding_tree_is_counted_without_building_it() -> None:
    spec = load_spec(ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml").model_copy(
        update={"num_llm_seeds": 64, "num_max_replies": 16})
    size = tree_size(spec)
    actions = len(spec.instructions())
    assert size.terminal_nodes == (actions * 64) ** 32
    assert short(size.llm_calls).endswith("e+" + str(len(str(size.llm_calls)) - 1))


def test_short_counts() -> None:
    assert [short(n) for n in (0, 999_999, 1_234_567, 10**400)] == [
        "0", "999,999", "1.2e+06", "1.0e+400"]


def test_solve_refuses_a_tree_past_the_bound_before_any_call(tmp_path: Path) -> None:
    config = ROOT / "gtsteer" / "configs" / "trade_fruit_tone.yaml"
    huge = tmp_path / "tree_huge.yaml"
    huge.write_text(config.read_text().replace("num_llm_seeds: 2", "num_llm_seeds: 64")
                    .replace("num_max_replies: 1", "num_max_replies: 16"))
    result = runner.invoke(app, ["solve", str(huge), "--llm", "fake", "-q",
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "GameTooLargeError: game tree: at most" in text and "past the bound" in text
    assert "num_llm_seeds (64), num_max_replies (16)" in text and "--max-calls" in text
    assert not (tmp_path / "o").exists()


def test_max_calls_counts_new_calls_and_never_refuses_a_cached_rerun(tmp_path: Path) -> None:
    """`--max-calls` counts new calls (issue 60): below the worst case it refuses nothing up
    front; a run stops after that many new calls (exit 3), and a cached rerun costs none."""
    args = ["solve", str(MIXED_2X2), "--llm", "fake", "-k", "5", "--games", "2"]
    spec = load_spec(MIXED_2X2)
    need = 2 * tree_size(spec).llm_calls
    ran = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert ran.exit_code == 0, ran.output
    assert (f"game tree: at most {tree_size(spec).nodes} nodes and {need // 2} LLM requests per"
            f" instance, {need} for 2 instance(s)") in " ".join(ran.output.split())
    cached = runner.invoke(app, [*args, "--max-calls", "1", "--out", str(tmp_path / "a")])
    assert cached.exit_code == 0, cached.output  # refused before issue 60: worst case > 1
    assert ", 0 new calls," in cached.output
    stopped = runner.invoke(app, [*args, "--seed", "7", "--max-calls", "3",
                                  "--out", str(tmp_path / "b")])
    assert stopped.exit_code == 3, stopped.output
    assert "stopped: --max-calls 3 reached (3 new calls)" in " ".join(stopped.output.split())
    assert not (tmp_path / "b" / "summary.json").exists()


def test_a_max_calls_above_the_default_raises_the_bound_before_any_call() -> None:
    assert tree_bound(None) == tree_bound(5) == DEFAULT_MAX_CALLS
    assert tree_bound(DEFAULT_MAX_CALLS * 3) == DEFAULT_MAX_CALLS * 3
