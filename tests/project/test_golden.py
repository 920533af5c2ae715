"""Golden outputs (issue 58, step 1): every product driver on the fake model, and every results
section a command rebuilds from committed docs/data, compared byte for byte with tests/golden/.

A refactor that must change no output proves it here; a deliberate change of behaviour
regenerates the goldens and shows the diff in review:

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/project/test_golden.py --update-golden -n 0

Each scenario runs its commands through the real command line (`gtsteer ...` in-process, the
fake model, small sizes, never the local model or Ray) in a temporary folder, copying any
docs/data folder it renders from, so nothing in the checkout is written. Each command is one
golden case, `tests/golden/<case>/`: `MANIFEST` lists every file the command wrote (binary ones
by name only), then one golden file per text output, the printout as `stdout.txt`. What may
differ between two runs (the run's folders, times written during the run, this commit, the
machine line, timings and versions) is replaced by `golden.normalise`, documented there;
everything else must match to the byte.

Floats are compared as written, so they pin this machine's numeric kernels too: a CPU whose
OpenBLAS or torch kernels round differently (tests/project/test_blas_kernels.py) may need
`--update-golden` with no change of gtsteer, and its diff shows last digits only.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from golden import GOLDEN, MANIFEST, ROOT, Normaliser, collect, differences, write_golden
from typer.testing import CliRunner

CONFIGS = ROOT / "gtsteer" / "configs"
DATA = ROOT / "docs" / "data"
#: rich wraps the printout at the terminal's width: one width for every run.
ENV = {"COLUMNS": "120", "LINES": "50", "HF_HUB_OFFLINE": "1"}


@dataclass(frozen=True)
class Step:
    """One command and what it wrote: golden name -> path under the scenario's folder (a file,
    or a folder whose files are all pinned). The printout is always pinned as stdout.txt."""

    case: str
    argv: list[str]
    outputs: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    #: Volatile parts only this command writes (`Normaliser.patterns`).
    volatile: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    """Commands run in order in one folder (a later one may read what an earlier one wrote);
    `copy` names docs/data folders copied in first, as `data/<name>`."""

    name: str
    steps: list[Step]
    copy: tuple[str, ...] = ()

    @property
    def measures(self) -> bool:
        """A scenario that renders committed data measures nothing: its durations are data."""
        return not self.copy


def cfg(name: str) -> str:
    """A config as the docs name it: relative (the scenario folder links `configs/` to the
    checkout's), so a printout's line breaks do not depend on where the checkout lies."""
    return f"configs/{name}.yaml"


FAKE = ["--llm", "fake"]
#: A step whose argv begins with it is `python -m lab ...` (the lab's runner), not `gtsteer ...`.
PY_LAB = "python -m lab"
WEREWOLF_TINY = ["--players", "5", "--max-messages", "2", "--max-days", "1"]

DRIVERS = [
    Scenario("solve", [
        Step("solve_fruit", ["solve", cfg("trade_fruit_tone"), *FAKE, "--games", "2",
                             "--out", "run"], {"run": "run"}),
    ]),
    Scenario("solve_meeting", [
        Step("solve_meeting", ["solve", cfg("schedule_meeting_dow"), *FAKE, "--games", "1",
                               "--out", "run"], {"run": "run"}),
        # the README's outcome table, read from that run's terminals
        Step("study_demo_outcomes", [PY_LAB, "demo-outcomes", "--results", "run", "--config",
                                     cfg("schedule_meeting_dow")]),
    ]),
    Scenario("psro", [
        Step("psro_fruit", ["psro", cfg("trade_fruit_tone"), *FAKE, "--iterations", "2",
                            "--candidates", "2", "--out", "run"], {"run": "run"}),
    ]),
    Scenario("imitate", [
        Step("imitate_fruit", ["imitate", cfg("trade_fruit_tone"), *FAKE, "--games", "2",
                               "--holdout", "1", "--steps", "30", "--out", "run"],
             {"run": "run"}),
        # that policy on fresh dialogues played live (its dataset's instances skipped)
        Step("evaluate_fruit", ["evaluate", cfg("trade_fruit_tone"), *FAKE, "--policy",
                                "run/model", "--games", "2", "--out", "evaluate"],
             {"evaluate": "evaluate"}),
        # its table in a results page: the run copied into docs/data, the section from there
        Step("live_eval_fruit", [PY_LAB, "live-eval", "--run", "evaluate", "--data", "data",
                                 "--doc", "doc.md"], {"data": "data", "doc.md": "doc.md"}),
        Step("live_eval_render", [PY_LAB, "live-eval", "--render-only", "--data", "data",
                                  "--doc", "doc.md"], {"doc.md": "doc.md"}),
    ]),
    Scenario("export", [
        Step("export_fruit", ["export", cfg("trade_fruit_tone"), "--format", "efg", *FAKE,
                              "--games", "1", "--out", "run"], {"run": "run"}),
    ]),
    Scenario("eval_steering", [
        Step("eval_steering_fruit", ["eval", "steering", cfg("trade_fruit_tone"), *FAKE,
                                     "--steering-samples", "2", "--out", "run"],
             {"run": "run"}),
    ]),
    Scenario("eval_judge", [
        Step("eval_judge_fruit", ["eval", "judge", cfg("trade_fruit_tone"), "--judge", "fake",
                                  "-o", "run"], {"run": "run"}),
    ]),
    Scenario("eval_reward", [
        Step("eval_reward_fruit", ["eval", "reward", cfg("trade_fruit_tone"), *FAKE, "--cases",
                                   "2", "-o", "run"], {"run": "run"}),
        Step("eval_reward_labelled", ["eval", "reward", cfg("trade_fruit_offer"), *FAKE,
                                      "--labelled", "gtsteer/data/reward_labelled_offers.yaml",
                                      "-o", "labelled"], {"labelled": "labelled"}),
    ]),
    Scenario("eval_verdict", [
        Step("eval_verdict_court", ["eval", "verdict", cfg("court"), *FAKE, "--games", "2",
                                    "--breadth", "2", "--out", "run"], {"run": "run"}),
    ]),
    Scenario("instances", [
        Step("instances_seeded", ["instances", cfg("trade_fruit_tone"), "--seeded", "--num", "2",
                                  "--out", "seeded.jsonl"], {"seeded.jsonl": "seeded.jsonl"}),
        # the fake model writes words, not instances: pinned as the one-line refusal it is
        Step("instances_llm", ["instances", cfg("trade_fruit_tone"), *FAKE, "--num", "2",
                               "--out", "llm.jsonl"], exit_code=2),
    ]),
    Scenario("werewolf_play", [
        Step("werewolf_play", ["werewolf", "play", *FAKE, "--seed", "3", "--db", "play.sqlite",
                               "--game-id", "g", *WEREWOLF_TINY], {"play.sqlite": "play.sqlite"}),
        Step("werewolf_show", ["werewolf", "show", "g", "--db", "play.sqlite"]),
        Step("werewolf_export", ["werewolf", "export", "g", "--db", "play.sqlite", "--out",
                                 "g.json"], {"g.json": "g.json"}),
        Step("werewolf_act", ["werewolf", "act", "--snapshot", "g.json", "--bot", "Elin",
                              "--action", "vote"]),
    ]),
    Scenario("llm_ask", [
        Step("llm_ask_text", ["llm", "ask", "--model", "fake", "Propose a day to meet."]),
        Step("llm_ask_choices", ["llm", "ask", "--model", "fake", "--choices", "A,B,C", "--json",
                                 "Pick one."]),
    ]),
    Scenario("werewolf_steering", [
        Step("werewolf_steer_train", ["werewolf", "steer-train", "--games", "2", *FAKE,
                                      "--states", "2", "--iterations", "20", "--train-steps",
                                      "30", "--players", "5", "--max-messages", "3",
                                      "--max-days", "1", "--out", "steer"], {"steer": "steer"}),
        Step("werewolf_evaluate", ["werewolf", "evaluate", "--games", "2", *FAKE, "--steer",
                                   "steer", "--out", "eval", *WEREWOLF_TINY, "--conditions",
                                   "static,village-steered"], {"eval": "eval"}),
        # its section of a doc: the lab's, from the run folder
        Step("werewolf_evaluate_doc", [PY_LAB, "werewolf-paired", "--results", "eval", "--doc",
                                       "doc.md"], {"doc.md": "doc.md"}),
        Step("werewolf_steer_heldout", [PY_LAB, "werewolf-heldout", "--policy", "steer",
                                        "--states", "2", "--per-game", "2", "--out", "fresh",
                                        "--doc", "fresh.md"],
             {"fresh": "fresh", "fresh.md": "fresh.md"}),
    ]),
    Scenario("werewolf_styles", [
        Step("werewolf_styles", [PY_LAB, "werewolf-styles", *FAKE, "--judge", "fake", "--states",
                                 "3", "--games", "1", "--players", "5", "--max-messages", "3",
                                 "--max-days", "1", "--out", "run", "--doc", "doc.md"],
             {"run": "run", "doc.md": "doc.md"}),
    ]),
]

FRUIT = cfg("trade_fruit_tone")

#: The benchmarks and studies that run on the fake model in seconds: the code that later moves
#: out of the package (issue 58, step 2) keeps its outputs.
LAB = [
    Scenario("study_verdict", [
        Step("study_verdict_court", [PY_LAB, "verdict", *FAKE, "--games", "2", "--breadth", "2",
                                     "--configs", "court", "--out", "run", "--doc", "doc.md"],
             {"run": "run", "doc.md": "doc.md"}),
    ]),
    Scenario("bench_reward", [
        Step("bench_reward_fake", [PY_LAB, "reward", "--models", "fake", "--cases", "2",
                                   "--configs", FRUIT, "--results", "run", "--doc", "doc.md"],
             {"run": "run", "doc.md": "doc.md"}),
    ]),
    Scenario("bench_steering", [
        Step("bench_steering_fake", [PY_LAB, "steering", "--models", "fake", "--samples", "2",
                                     "--configs", FRUIT, "--results", "run", "--doc", "doc.md"],
             {"run": "run", "doc.md": "doc.md"}),
    ]),
    Scenario("steering_table", [
        Step("steering_table_fake", [PY_LAB, "steering-table", "--models", "fake", "--judges",
                                     "fake", "--configs", FRUIT, "--samples", "2", "--results",
                                     "run", "--doc", "doc.md", "--png", "table.png"],
             {"run": "run", "doc.md": "doc.md"}),
        # the same section again from the saved reports alone
        Step("steering_table_render", [PY_LAB, "steering-table", "--judges", "fake",
                                       "--configs", FRUIT, "--samples", "2", "--results", "run",
                                       "--render-only", "--doc", "again.md", "--png", "again.png"],
             {"again.md": "again.md"}),
    ]),
    Scenario("gambit_check", [
        # its last column is the seconds Gambit took
        Step("gambit_check_fruit", [PY_LAB, "gambit-check", FRUIT],
             volatile=(r"(?<=\| )[\d.]+(?= \|$)",)),
    ]),
]

TABLE1_CONFIGS = [cfg(n) for n in ("trade_fruit_tone", "trade_fruit_offer",
                                   "schedule_meeting_dow", "debate")]

RENDERS = [
    # docs/TABLE1.md, as its first line says it was written
    Scenario("table1", [
        Step("table1_render", [PY_LAB, "table1", "--results", "data/table1", "--render-only",
                               "--doc", "TABLE1.md", *TABLE1_CONFIGS], {"TABLE1.md": "TABLE1.md"}),
        # the same with docs/TENSION.md's dealt row, before its run has finished an instance
        Step("table1_render_also", [PY_LAB, "table1", "--results", "data/table1",
                                    "--render-only", "--doc", "T1A.md", *TABLE1_CONFIGS,
                                    "--also", f"data/tension:{cfg('schedule_meeting_opposed')}"
                                    ":deals=4:games=60"], {"T1A.md": "T1A.md"}),
    ], copy=("table1",)),
    # the Qwen 0.5B row of docs/BENCHMARKS.md's Table 1 note
    Scenario("table1_qwen05", [
        Step("table1_qwen05_render", [PY_LAB, "table1", "--llm", "local:qwen2.5-coder-0.5b",
                                      "--results", "data/table1-qwen05", "--render-only",
                                      "--heldout", "--doc", "T1Q.md", cfg("schedule_meeting_dow")],
             {"T1Q.md": "T1Q.md"}),
    ], copy=("table1-qwen05",)),
    # docs/BENCHMARKS.md "Samples study" (debate) and its meeting section
    Scenario("samples", [
        Step("samples_debate_render", [PY_LAB, "samples", cfg("debate"), "--seeds", "2,4,8",
                                       "--results", "data/samples_study", "--render-only",
                                       "--doc", "BENCHMARKS.md"],
             {"BENCHMARKS.md": "BENCHMARKS.md"}),
        Step("samples_meeting_render", [PY_LAB, "samples", cfg("schedule_meeting_dow"),
                                        "--seeds", "2,4", "--games", "10", "--results",
                                        "data/samples_study_meeting", "--render-only",
                                        "--doc", "MEETING.md"], {"MEETING.md": "MEETING.md"}),
    ], copy=("samples_study", "samples_study_meeting")),
    # docs/PSRO.md's discovery section
    Scenario("psro_discovery", [
        Step("psro_discovery_render", [PY_LAB, "psro-discovery", "--games", "10",
                                       "--render-only", "--results", "data/psro_discovery_fair",
                                       "--doc", "PSRO.md"], {"PSRO.md": "PSRO.md"}),
    ], copy=("psro_discovery_fair",)),
    # docs/LIVE_EVAL.md's section, from the committed evaluate runs
    Scenario("live_eval_committed", [
        Step("live_eval_committed_render", [PY_LAB, "live-eval", "--render-only", "--data",
                                            "data/live_eval", "--doc", "LIVE.md"],
             {"LIVE.md": "LIVE.md"}),
    ], copy=("live_eval",)),
    # docs/WEREWOLF_STEERING.md's three results sections
    Scenario("werewolf_renders", [
        Step("werewolf_fresh_render", [PY_LAB, "werewolf-fresh", "--results", "data/werewolf_fresh",
                                       "--doc", "fresh.md"],
             {"fresh.md": "fresh.md"}),
        Step("werewolf_paired_render", [PY_LAB, "werewolf-paired", "--results",
                                        "data/werewolf_paired", "--doc", "paired.md"],
             {"paired.md": "paired.md"}),
        *[Step(f"werewolf_styles_{name}_render",
               [PY_LAB, "werewolf-styles", "--results", f"data/werewolf_styles/{name}",
                "--doc", f"styles_{name}.md"], {f"styles_{name}.md": f"styles_{name}.md"})
          for name in ("smollm2", "qwen05", "qwen05_fresh")],
    ], copy=("werewolf_fresh", "werewolf_paired", "werewolf_styles")),
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" in metafunc.fixturenames:
        every = DRIVERS + LAB + RENDERS
        metafunc.parametrize("scenario", every, ids=[s.name for s in every])


def run_scenario(scenario: Scenario, folder: Path,
                 check: Callable[[str, dict[str, str | None]], None]) -> None:
    from lab_support import lab

    from gtsteer.cli import app

    runner = CliRunner()
    since = dt.datetime.now(dt.UTC)
    (folder / "configs").symlink_to(CONFIGS, target_is_directory=True)
    (folder / "tests").mkdir()
    (folder / "tests" / "data").symlink_to(ROOT / "tests" / "data", target_is_directory=True)
    (folder / "gtsteer").mkdir()
    (folder / "gtsteer" / "data").symlink_to(ROOT / "gtsteer" / "data", target_is_directory=True)
    for name in scenario.copy:
        shutil.copytree(DATA / name, folder / "data" / name)
    for step in scenario.steps:
        command, argv = (lab, step.argv[1:]) if step.argv[0] == PY_LAB else (app, step.argv)
        result = runner.invoke(command, argv, env=ENV)
        assert result.exit_code == step.exit_code, f"{step.case}: {result.output}"
        outputs: dict[str, Path | str] = {n: folder / p for n, p in step.outputs.items()}
        outputs["stdout.txt"] = result.output
        how = Normaliser({folder: "<TMP>", ROOT: "<ROOT>"}, durations=scenario.measures,
                         patterns=step.volatile, since=since)
        check(step.case, collect(outputs, how))


def test_golden(scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                request: pytest.FixtureRequest) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # relative --out/--doc land here, never in the checkout
    update = request.config.getoption("--update-golden")

    def check(case: str, found: dict[str, str | None]) -> None:
        if update:
            write_golden(case, found)
            return
        problems = differences(case, found)
        assert not problems, f"golden {case} differs:\n" + "\n".join(problems)

    # rich fixes a console's width once it is given one (COLUMNS when the CLI was imported, or
    # an earlier test in this worker): the CLI's consoles read ENV's COLUMNS again here.
    from gtsteer.cli import common
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", None)
        monkeypatch.setattr(console, "_height", None)
    run_scenario(scenario, work, check)


# ---- the comparison itself -----------------------------------------------------------------


def test_normalise_replaces_this_runs_volatile_parts_and_keeps_the_data(tmp_path: Path) -> None:
    how = Normaliser({tmp_path: "<TMP>", ROOT: "<ROOT>"})
    now = dt.datetime.now(dt.UTC)
    text = (f"{tmp_path}/run/summary.json {ROOT}/configs/x.yaml\n"
            f"finished {now:%Y-%m-%d %H:%M} UTC; rows complete 2026-12-05 08:50 UTC\n"
            f"Command: `x` · 2 CPUs (AMD EPYC), Python 3.11.7, {now:%Y-%m-%d %H:%M} UTC,"
            " load average at the end 2.9, 2.8, 3.0\n"
            "measured on 2 CPUs (Intel Xeon), Python 3.11.7, 2026-12-05 22:03 UTC, load average"
            " at the end 2.3, 1.2, 0.8\n"
            '{"wall_s": 1.25, "expand_seconds": 3, "finished_at": "x", "schema_version": 1,'
            ' "num_solved": 2}\n'
            "(238 new calls, 1.2 s) 0:00:01\n")
    assert how(text) == (
        "<TMP>/run/summary.json <ROOT>/configs/x.yaml\n"
        "finished <NOW>; rows complete 2026-12-05 08:50 UTC\n"
        "Command: `x` · <MACHINE>, <NOW>, load average at the end <LOAD>\n"
        "measured on 2 CPUs (Intel Xeon), Python 3.11.7, 2026-12-05 22:03 UTC, load average"
        " at the end 2.3, 1.2, 0.8\n"
        '{"wall_s": "<VOLATILE>", "expand_seconds": "<VOLATILE>", "finished_at": "<VOLATILE>",'
        ' "schema_version": 1, "num_solved": 2}\n'
        "(238 new calls, <DURATION>) <DURATION>\n")
    # a render from committed data keeps its durations: they are data
    assert Normaliser({}, durations=False)("in 117 minutes") == "in 117 minutes"


def test_one_changed_byte_of_a_golden_is_a_difference(tmp_path: Path) -> None:
    case = "export_fruit"
    names = [line.split("  (")[0] for line in
             (GOLDEN / case / MANIFEST).read_text(encoding="utf-8").splitlines()]
    found: dict[str, str | None] = {
        n: (GOLDEN / case / n).read_text(encoding="utf-8") if (GOLDEN / case / n).is_file()
        else None for n in names}
    assert differences(case, found) == []
    shutil.copytree(GOLDEN / case, tmp_path / case)
    summary = tmp_path / case / "run" / "export.json"
    data = bytearray(summary.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of one byte
    summary.write_bytes(bytes(data))
    (problem,) = differences(case, found, root=tmp_path)
    assert problem.startswith("run/export.json differs:")
    (tmp_path / case / "run" / "export.json").unlink()
    assert differences(case, found, root=tmp_path) == ["run/export.json: no golden file"]
    del found["stdout.txt"]
    assert differences(case, found, root=tmp_path)[0].startswith("files differ:")
