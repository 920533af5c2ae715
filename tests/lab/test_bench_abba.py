"""`python -m lab abba` on the `fake` model against this repository's HEAD: the runs come in the
order A B B A, the A runs import the temporary worktree's gtsteer, identical code gives
identical digests, the worktree is gone afterwards (on error too), and the section's ratios and
"same answers" column say what the numbers say. No model is loaded."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.bench import bench_abba, benchdoc

ROOT = benchdoc.ROOT


def worktrees() -> str:
    return subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict, str]]:
    """One round against HEAD with the fake model, the held-out readers off (seconds per run),
    written into a temporary doc: the result printed as JSON, and the doc."""
    doc = tmp_path_factory.mktemp("abba") / "BENCHMARKS.md"
    job = bench_abba.job_args
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench_abba, "job_args", lambda llm: [*job(llm), "--heldout-readers", ""])
        with contextlib.redirect_stdout(out):
            bench_abba.main(["--against", "HEAD", "--llm", "fake", "--rounds", "1",
                             "--doc", str(doc)])
    result = next(json.loads(line) for line in out.getvalue().splitlines()
                  if line.startswith('{"against"'))
    yield result, doc.read_text(encoding="utf-8")


def test_the_runs_come_in_abba_order(bench: tuple[dict, str]) -> None:
    result, _ = bench
    assert [r["code"] for r in result["runs"]] == ["A", "B", "B", "A"]
    assert [r["run"] for r in result["runs"]] == [1, 2, 3, 4]
    assert bench_abba.order(2) == ["A", "B", "B", "A"] * 2


def test_the_a_runs_import_the_worktrees_code(bench: tuple[dict, str]) -> None:
    result, _ = bench
    a, b = result["trees"]["A"], result["trees"]["B"]
    assert Path(a["path"]) != ROOT and Path(a["gtsteer"]) == Path(a["path"]) / "gtsteer" / \
        "__init__.py"
    assert Path(b["gtsteer"]) == ROOT / "gtsteer" / "__init__.py"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    assert a["commit"] == head and b["commit"].startswith(head)


def test_the_worktree_is_removed_afterwards(bench: tuple[dict, str]) -> None:
    result, _ = bench
    path = result["trees"]["A"]["path"]
    assert not Path(path).exists() and not Path(path).parent.exists()
    assert path not in worktrees()


def test_identical_code_gives_identical_answers(bench: tuple[dict, str]) -> None:
    result, doc = bench
    runs = result["runs"]
    assert len({(r["terminals"], r["decisions"]) for r in runs}) == 1
    assert all(r["generated"] > 0 and r["table1_s"] >= r["readme_s"] > 0 for r in runs)
    assert bench_abba.same_answers(runs) == ["reference", "yes", "yes", "yes"]
    assert doc.count(bench_abba.START) == 1 and doc.count(bench_abba.END) == 1
    assert "Same answers: yes." in doc and "**no**" not in doc
    assert "llama-bench: not measured (model fake)." in doc
    assert "--against HEAD" in doc and "ratio B/A = " in doc


def run(i: int, code: str, readme: float, table1: float, wall: float,
        terminals: str = "t" * 12) -> dict:
    return {"run": i, "code": code, "commit": "abc1234", "wall_s": wall, "readme_s": readme,
            "table1_s": table1, "generated": 100, "evaluated": None, "terminals": terminals,
            "decisions": "d" * 12}


RUNS = [run(1, "A", 10.0, 14.0, 20.0), run(2, "B", 8.0, 12.0, 18.0),
        run(3, "B", 9.0, 12.0, 19.0), run(4, "A", 12.0, 16.0, 22.0)]


def result_of(runs: list[dict]) -> dict:
    return {"against": "HEAD~1", "llm": "local:smollm2-135m", "threads": 2, "rounds": 1,
            "trees": {"A": {"commit": "abc1234"}, "B": {"commit": "def5678"}}, "runs": runs,
            "llama_bench": {"before": {"pp": 143.0, "tg": 60.4},
                            "after": {"pp": 140.0, "tg": 59.0}}}


def test_the_ratio_is_the_mean_of_b_over_the_mean_of_a() -> None:
    assert bench_abba.ratio(RUNS, "readme_s") == pytest.approx(8.5 / 11.0)
    assert bench_abba.ratio(RUNS, "table1_s") == pytest.approx(12.0 / 15.0)
    assert bench_abba.ratio_text(8.5 / 11.0) == "ratio B/A = 0.77 (B faster)"
    assert bench_abba.ratio_text(1.25) == "ratio B/A = 1.25 (B slower)"
    assert bench_abba.ratio_text(1.003) == "ratio B/A = 1.00 (no difference at this precision)"
    line = bench_abba.ratio_line(RUNS, "readme_s", "README job")
    assert line == ("- README job: **ratio B/A = 0.77 (B faster)**; B: (8.00 + 9.00) / 2 = 8.50 s"
                    " over A: (10.00 + 12.00) / 2 = 11.00 s.")


def test_the_section_shows_rates_runs_and_ratios() -> None:
    section = bench_abba.render(result_of(RUNS), "cmd", "a machine")
    assert section.startswith(bench_abba.START) and section.endswith(bench_abba.END)
    assert "143 prompt / 60.4 generated tokens/s before the first run, 140 / 59.0 after" \
        in section
    rows = [line for line in section.splitlines() if line.startswith("| ") and
            line[2].isdigit()]
    assert [row.split(" | ")[1] for row in rows] == ["A", "B", "B", "A"]
    assert rows[1].startswith("| 2 | B | abc1234 | 18.0 s | 8.0 s | 12.0 s | 100 | n/a |")
    assert "Table 1 instance (both trees): **ratio B/A = 0.80 (B faster)**" in section
    assert "whole process: **ratio B/A = 0.88 (B faster)**" in section


def test_a_changed_answer_is_said_loudly() -> None:
    runs = [*RUNS[:2], run(3, "B", 9.0, 12.0, 19.0, terminals="x" * 12), RUNS[3]]
    assert bench_abba.same_answers(runs) == ["reference", "yes", "**no**", "yes"]
    section = bench_abba.render(result_of(runs), "cmd", "a machine")
    assert "| `xxxxxxxxxxxx` | `dddddddddddd` | **no** |" in section
    assert ("**Same answers: NO. Runs 3 (B) differ from run 1: B decided differently from A, so"
            " this is not a pure speed change") in section
    drift = [*RUNS[:3], run(4, "A", 12.0, 16.0, 22.0, terminals="y" * 12)]
    assert "A's own runs differ from each other" in bench_abba.answers_line(drift)


def test_a_revision_that_is_not_a_commit_is_named() -> None:
    with pytest.raises(SystemExit) as stop:
        bench_abba.main(["--against", "no-such-rev-0451", "--llm", "fake", "--no-write"])
    assert "'no-such-rev-0451' is not a commit" in str(stop.value.code)


def test_a_reference_without_profile_is_refused_and_its_worktree_removed() -> None:
    """The commit before `solve --profile` (2863ce1) cannot run the job."""
    sha = bench_abba.resolve("2863ce1^")
    with pytest.raises(bench_abba.AbbaError, match=r"has no `gtsteer solve --profile`"):
        with bench_abba.reference_tree(sha) as path:
            bench_abba.prepare("A", path, sha[:7], 2)
    assert not path.exists() and str(path) not in worktrees()


def test_the_help_scan_finds_whole_option_names_only() -> None:
    assert bench_abba.missing_options("│ --heldout  <bool> │\n│ --profile  <bool> │") == []
    assert bench_abba.missing_options("--heldout-readers TEXT, --profile-x") == [
        "--heldout", "--profile"]
