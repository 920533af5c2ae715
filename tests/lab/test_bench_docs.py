"""The benchmarks' shared doc helpers (lab/bench/benchdoc.py) and bench_prefix's partial
runs, on fake numbers: no model is loaded and no benchmark runs."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "gtsteer" / "configs"
BENCH = ROOT / "lab" / "bench"
SECTION_SCRIPTS = sorted(p.stem for p in BENCH.glob("bench_*.py")) + ["study_verdict"]
STUDIES = {"table1", "samples_study", "steering_table", "study_verdict", "demo_outcomes"}


def load(name: str) -> ModuleType:
    """A benchmark (lab/bench/) or study (lab/studies/) module by its name."""
    room = "studies" if name in STUDIES else "bench"
    return importlib.import_module(f"lab.{room}.{name}")


# ---- benchdoc ----------------------------------------------------------------------------------


@pytest.fixture
def benchdoc() -> ModuleType:
    return load("benchdoc")


def test_write_section_replaces_only_its_own_section(benchdoc, tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    a_start, a_end = benchdoc.markers("a")
    b_start, b_end = benchdoc.markers("b")
    doc.write_text(f"# Benchmarks\n\n{a_start}\nold a\n{a_end}\n\n{b_start}\nb stays\n{b_end}\n")
    benchdoc.write_section(doc, a_start, a_end, f"{a_start}\nnew a\n{a_end}\n")
    assert doc.read_text() == (
        f"# Benchmarks\n\n{a_start}\nnew a\n{a_end}\n\n{b_start}\nb stays\n{b_end}\n"
    )
    assert benchdoc.read_section(doc, a_start, a_end) == f"{a_start}\nnew a\n{a_end}"


def test_write_section_appends_or_creates(benchdoc, tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "BENCHMARKS.md"
    start, end = benchdoc.markers("x")
    assert benchdoc.read_section(doc, start, end) is None
    benchdoc.write_section(doc, start, end, benchdoc.wrap(start, end, "## X\n\nnumbers\n"))
    assert doc.read_text() == f"# Benchmarks\n\n{start}\n## X\n\nnumbers\n{end}\n"
    other, other_end = benchdoc.markers("y")
    benchdoc.write_section(doc, other, other_end, f"{other}\ny\n{other_end}")
    assert doc.read_text().endswith(f"{end}\n\n{other}\ny\n{other_end}\n")


def test_write_section_refuses_a_section_without_its_markers(benchdoc, tmp_path: Path) -> None:
    start, end = benchdoc.markers("x")
    with pytest.raises(ValueError, match="x:start"):
        benchdoc.write_section(tmp_path / "d.md", start, end, "## X without markers")
    assert not (tmp_path / "d.md").exists()


def test_machine_line_names_cpus_python_commit_load(benchdoc) -> None:
    line = benchdoc.machine_line(commit="abc1234", load_when="at start", note=" (shared)")
    m = benchdoc.machine()
    assert line.startswith(f"{m.cpus} CPUs ({m.cpu}), Python {m.python}, ")
    assert ", commit abc1234, load average at start " in line and line.endswith(" (shared)")
    assert m.date.endswith(" UTC") and len(m.load) == 3


def test_run_grid_keeps_every_pair_and_turns_a_failure_into_its_message(benchdoc) -> None:
    def measure(config: str, model: str, folder: str) -> str:
        if model == "bad":
            raise RuntimeError("no such model")
        return f"{config}|{model}|{folder}"

    rows = benchdoc.run_grid(["gtsteer/configs/a.yaml", "b.yaml"], ["local:x/y", "bad"], measure)
    assert rows == [
        ("gtsteer/configs/a.yaml", "local:x/y", "gtsteer/configs/a.yaml|local:x/y|a-local_x_y"),
        ("gtsteer/configs/a.yaml", "bad", "RuntimeError: no such model"),
        ("b.yaml", "local:x/y", "b.yaml|local:x/y|b-local_x_y"),
        ("b.yaml", "bad", "RuntimeError: no such model"),
    ]


def test_commit_is_this_checkout_head(benchdoc) -> None:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=False).stdout.strip()
    if not head:
        pytest.skip("not a git checkout")
    assert benchdoc.commit() == head
    assert benchdoc.commit(["no/such/path"]) == head


# ---- every script loads both ways --------------------------------------------------------------


@pytest.mark.parametrize("name", SECTION_SCRIPTS)
def test_each_benchmark_writes_its_section_with_benchdoc(name: str) -> None:
    module = load(name)
    assert (module.START, module.END) == module.benchdoc.markers(name)
    assert not hasattr(module, "write_section")  # the one in benchdoc, no private copy


@pytest.mark.parametrize("name", ["prefix", "web"])
def test_a_benchmark_runs_from_the_repo_root_and_elsewhere(name: str, tmp_path: Path) -> None:
    for cwd in (ROOT, tmp_path):
        done = subprocess.run([sys.executable, "-m", "lab", name, "--help"],
                              cwd=cwd, capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"usage: python -m lab {name} " in done.stdout


# ---- bench_prefix: a partial run keeps the other parts ---------------------------------------


def on_off(wall_off: float, wall_on: float, outcome: str) -> dict[str, Any]:
    def variant(wall: float, evaluated: int) -> dict[str, Any]:
        return {"wall_s": wall, "tokens_requested": 1000, "tokens_evaluated": evaluated,
                "peak_cache_mb": 10.0, "bound_mb": 2048.0, "restores": 3, "evictions": 0,
                "outcome": outcome, "models": ["tiny.gguf"]}

    return {"off": variant(wall_off, 1000), "on": variant(wall_on, 400)}


def fake_results(wall_off: float) -> dict[str, Any]:
    return {
        "main": {"command": "gtsteer solve gtsteer/configs/x.yaml --games 1",
                 **on_off(wall_off, 50.0, "aaa")},
        "werewolf": {"command": "7 players, --max-days 2 --max-messages 3 --seed 0",
                     **on_off(wall_off + 1, 20.0, "bbb")},
        "threads": [{"threads": t, "busy": busy, "wall_s": wall_off + t, "prompts": 12,
                     "tokens_requested": 12 * 395, "max_tokens": 16}
                    for busy in (False, True) for t in (1, 2)],
    }


@pytest.fixture
def prefix() -> ModuleType:
    return load("bench_prefix")


def test_each_part_names_its_command_and_machine(prefix) -> None:
    full = "python -m lab prefix"
    section = prefix.render(fake_results(100.0), {p: (full, f"M-{p}") for p in prefix.PARTS})
    parts = prefix.split_parts(section)
    assert set(parts) == set(prefix.PARTS)
    for part, text in parts.items():
        assert text.startswith(prefix.HEADINGS[part])
        assert f"Command: `{full}`  \nMachine: M-{part}." in text
    assert "| off | 100.0 s | 1000 | 1000 |" in parts["main"]
    assert "| 2 | one busy process | 102.0 s |" in parts["threads"]


def test_a_partial_run_replaces_its_part_and_keeps_the_others(prefix) -> None:
    full = "python -m lab prefix"
    before = prefix.render(fake_results(100.0), {p: (full, "old machine") for p in prefix.PARTS})
    only = "python -m lab prefix --only main"
    new = fake_results(300.0)
    after = prefix.render({"main": new["main"]}, {"main": (only, "new machine")}, before)

    old_parts, new_parts = prefix.split_parts(before), prefix.split_parts(after)
    assert new_parts["werewolf"] == old_parts["werewolf"]
    assert new_parts["threads"] == old_parts["threads"]
    assert f"Command: `{only}`  \nMachine: new machine." in new_parts["main"]
    assert "| off | 300.0 s |" in new_parts["main"] and "100.0 s" not in new_parts["main"]
    assert "old machine" in new_parts["werewolf"] and "old machine" not in new_parts["main"]
    # parts stay in their order, each once, inside the markers
    order = [after.index(prefix.HEADINGS[p]) for p in prefix.PARTS]
    assert order == sorted(order) and after.count("### ") == 3
    assert after.startswith(prefix.START) and after.rstrip().endswith(prefix.END)


def test_main_with_only_rewrites_one_subsection_of_the_doc(
    prefix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    full = prefix.render(fake_results(100.0), {p: ("full run", "old") for p in prefix.PARTS})
    other_start, other_end = prefix.benchdoc.markers("bench_other")
    doc.write_text(f"# Benchmarks\n\n{full}\n{other_start}\nother\n{other_end}\n")
    monkeypatch.setattr(prefix, "DOC", doc)
    monkeypatch.setattr(prefix, "bench_main_job",
                        lambda job, variants, run_cli: fake_results(7.0)["main"])

    def never(*args: Any) -> None:
        raise AssertionError("only the main part may run")

    monkeypatch.setattr(prefix, "bench_werewolf", never)
    monkeypatch.setattr(prefix, "bench_threads", never)
    prefix.main(["--only", "main"], run_cli=never)

    text = doc.read_text()
    written = prefix.split_parts(prefix.benchdoc.read_section(doc, prefix.START, prefix.END))
    before = prefix.split_parts(full)
    assert "Command: `python -m lab prefix --only main`" in written["main"]
    assert "| off | 7.0 s |" in written["main"]
    assert written["werewolf"] == before["werewolf"] and written["threads"] == before["threads"]
    assert text.endswith(f"{other_start}\nother\n{other_end}\n")


def test_the_written_doc_section_splits_into_all_parts(prefix) -> None:
    # a partial run finds the other parts by their headings: the doc must still carry them
    written = prefix.benchdoc.read_section(prefix.DOC, prefix.START, prefix.END)
    assert written is not None
    parts = prefix.split_parts(written)
    assert set(parts) == set(prefix.PARTS)
    assert all("\nCommand: `" in text and "\nMachine: " in text for text in parts.values())


def test_fresh_cache_is_private_and_restored(
    benchdoc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.delenv("GTSTEER_MODEL_DIR", raising=False)
    with benchdoc.fresh_cache("bench-x-") as cache:
        assert os.environ["GTSTEER_CACHE_DIR"] == str(cache) and cache.is_dir()
        assert cache.name.startswith("bench-x-") and not any(cache.iterdir())
        assert os.environ["GTSTEER_MODEL_DIR"] == str(tmp_path / "shared" / "models")
    assert os.environ["GTSTEER_CACHE_DIR"] == str(tmp_path / "shared") and not cache.exists()


def test_fresh_cache_until_exit_lasts_the_process_and_is_removed_at_exit(tmp_path: Path) -> None:
    code = (
        "import os; from lab.bench import benchdoc\n"
        "path = benchdoc.fresh_cache_until_exit('bench-y-')\n"
        "assert os.environ['GTSTEER_CACHE_DIR'] == str(path) and path.is_dir()\n"
        "(path / 'answer').write_text('x')\n"
        "print(path)\n"
    )
    env = {**os.environ, "GTSTEER_CACHE_DIR": str(tmp_path / "shared")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    cache = Path(out.stdout.strip())
    assert cache.name.startswith("bench-y-") and not cache.exists()


# ---- table1 ------------------------------------------------------------------------------------


def test_table1_writes_each_finished_domain_and_names_the_pending_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path
) -> None:
    table1 = load("table1")
    written: list[str] = []
    real_render = table1.render

    def render(*args: Any, **kwargs: Any) -> str:  # the doc as it stood after each domain
        written.append(real_render(*args, **kwargs))
        return written[-1]

    monkeypatch.setattr(table1, "render", render)
    doc = tmp_path / "TABLE1.md"
    table1.main(["--llm", "fake", "--games", "2", "--steering-samples", "1", "--quiet", "--results",
                 str(tmp_path / "res"), "--doc", str(doc), str(ROOT / "gtsteer/configs/court.yaml"),
                 str(CONFIG_DIR / "trade_fruit_tone.yaml")])
    first, last = written
    assert "| `court` | 1 | 2 / 2 |" in first and "trade_fruit_tone` | 2" not in first
    assert "Not measured yet" in first
    assert "`trade_fruit_tone` (0 instances solved so far)." in first
    assert "| `trade_fruit_tone` | 2 | 2 / 2 |" in last and "Not measured yet" not in last
    assert doc.read_text(encoding="utf-8") == last
    summary = json.loads((tmp_path / "res" / "court" / "summary.json").read_text())
    nash = summary["metrics"]["nash_conv"]["mean"]
    assert f"| `court` | 1 | 2 / 2 | {table1.signed(nash)} " in last
    # Steering is classified by the default judge, MiniLM, validated on the labelled messages
    # first: it passes court's focus, and fruit tone is refused there, so that cell says so.
    court_row = next(x for x in last.splitlines() if x.startswith("| `court`"))
    fruit_row = next(x for x in last.splitlines() if x.startswith("| `trade_fruit_tone`"))
    assert court_row.endswith("(K=1, judge `embed:all-MiniLM-L6-v2`) |")
    assert fruit_row.endswith("| not measured: no validated judge (K=1) |")
    assert "no judge passed the labelled messages (docs/EVAL.md): `trade_fruit_tone`" in last
    fruit_saved = json.loads(
        (tmp_path / "res" / "trade_fruit_tone" / "table1_row.json").read_text()
    )
    assert "trade_fruit_tone.tone" in fruit_saved["row"]["steering_refused"]
    assert fruit_saved["row"]["steering_plain"] is None
    # Each row names the one-domain command and the commit that measured it.
    court_how = next(line for line in last.splitlines() if line.startswith("- `court`: "))
    assert court_how.startswith("- `court`: `python -m lab table1 --llm fake --games 2 ")
    assert "gtsteer/configs/court.yaml` at commit " in court_how and "trade_fruit" not in court_how

    # --render-only: the saved rows and nothing measured, and a domain with no finished row is
    # listed with the instances solved so far.
    def no_measuring(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("--render-only measured a domain")

    monkeypatch.setattr(table1, "measure", no_measuring)
    (tmp_path / "res" / "trade_fruit_tone" / "table1_row.json").unlink()
    (tmp_path / "res" / "trade_fruit_tone" / "games" / "1.json").unlink()
    table1.main(["--llm", "fake", "--games", "2", "--steering-samples", "1", "--render-only",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(CONFIG_DIR / "court.yaml"), str(CONFIG_DIR / "trade_fruit_tone.yaml")])
    rendered = doc.read_text(encoding="utf-8")
    # The gain chart is drawn from the rows and linked from the page.
    chart = tmp_path / "TABLE1_gain.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](TABLE1_gain.png)" in rendered
    court_line = next(line for line in last.splitlines() if line.startswith("| `court`"))
    assert court_line in rendered.splitlines()
    assert "`trade_fruit_tone` (1 instance solved so far)." in rendered
    assert court_how in rendered.splitlines()
    # A row saved before rows kept their command says so.
    saved = tmp_path / "res" / "court" / "table1_row.json"
    old_style = {k: v for k, v in json.loads(saved.read_text()).items()
                 if k in ("llm", "row")}
    saved.write_text(json.dumps(old_style))
    table1.main(["--llm", "fake", "--games", "2", "--steering-samples", "1", "--render-only",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(ROOT / "gtsteer/configs/court.yaml")])
    assert "- `court`: not recorded" in doc.read_text(encoding="utf-8")
    # Rows saved for other settings are not shown as these settings' results.
    table1.main(["--llm", "fake", "--games", "3", "--steering-samples", "1", "--render-only",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(ROOT / "gtsteer/configs/court.yaml")])
    assert "| `court` |" not in doc.read_text(encoding="utf-8")
    # Without --games, each saved row is shown at its own instance count.
    table1.main(["--llm", "fake", "--steering-samples", "1", "--render-only",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(ROOT / "gtsteer/configs/court.yaml")])
    assert "| `court` | 1 | 2 / 2 |" in doc.read_text(encoding="utf-8")
    # A row saved at another steering K is not these settings' row; without --samples, each
    # saved row is shown at its own K (rows measured with different K share one page).
    table1.main(["--llm", "fake", "--steering-samples", "16", "--render-only",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(ROOT / "gtsteer/configs/court.yaml")])
    assert "| `court` |" not in doc.read_text(encoding="utf-8")
    table1.main(["--llm", "fake", "--render-only",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(ROOT / "gtsteer/configs/court.yaml")])
    assert "| `court` | 1 | 2 / 2 |" in doc.read_text(encoding="utf-8")
    assert "(K=1" in doc.read_text(encoding="utf-8")


def test_table1_names_gains_found_where_steering_sits_at_chance() -> None:
    table1 = load("table1")
    from gtsteer.solvers.metrics import mean_ci

    def row(domain: str, gains: list[float], low: float) -> Any:
        return table1.Row(config=f"gtsteer/configs/{domain}.yaml", domain=domain, games=3, solved=3,
                          cfr_gain=mean_ci(gains), steering_samples=10, steering_plain=0.4,
                          steering_chance=0.33, steering_low=[low])

    rows = [row("noise", [0.5, 0.7, 0.9], 0.2),      # gain > 0, steering at chance: named
            row("steered", [0.5, 0.7, 0.9], 0.5),    # gain > 0, steering above chance
            row("flat", [-0.1, 0.0, 0.1], 0.2)]      # no gain
    assert table1.gain_without_steering(rows) == ["`noise`"]
    # The paper's meeting row is the day-proposal game, not the tone one.
    assert [table1.family(d) for d in ("trade_fruit_tone", "schedule_meeting_dow",
                                       "schedule_meeting_tone", "debate", "court")] == [
        "fruit", "meeting", None, "debate", None]
    assert "(in this run: `noise`)" in table1.render(rows, "fake", "table1")


def test_table1_heldout_column_is_the_solve_summarys_fresh_sample_gain(
    tmp_path: Path, isolated_cache: Path
) -> None:
    table1 = load("table1")
    doc = tmp_path / "TABLE1.md"
    table1.main(["--llm", "fake", "--games", "3", "--steering-samples", "0", "--quiet", "--heldout",
                 "--results", str(tmp_path / "res"), "--doc", str(doc),
                 str(CONFIG_DIR / "trade_fruit_tone.yaml")])
    summary = json.loads((tmp_path / "res" / "trade_fruit_tone" / "summary.json").read_text())
    held = summary["metrics"]["cfr_gain_heldout"]
    assert summary["heldout_instances"] == [0, 1, 2] and held["n"] == 3
    line = next(x for x in doc.read_text(encoding="utf-8").splitlines()
                if x.startswith("| `trade_fruit_tone`"))
    cells = [c.strip() for c in line.split("|")]
    assert cells[10] == (f"{table1.signed(held['mean'])} [{table1.signed(held['ci_low'])},"
                        f" {table1.signed(held['ci_high'])}]")
    clean = summary["heldout_metrics"]["clean"]
    assert cells[8].startswith(f"{table1.signed(clean['mean'])} [{table1.signed(clean['ci_low'])},")
    assert cells[9].startswith("nearest ") and "; distilled " in cells[9]
    assert "On fresh samples the clean estimate (the first mover's opening decision) is " in (
        doc.read_text(encoding="utf-8"))
    # Every interval of the row is recomputable from the per-instance values it saved.
    from gtsteer.solvers.metrics import mean_ci

    saved_row = json.loads((tmp_path / "res" / "trade_fruit_tone" / "table1_row.json").read_text())
    values = saved_row["row"]["per_instance"]
    assert saved_row["row"]["instances"] == [0, 1, 2]
    assert mean_ci(values["heldout_clean"]).model_dump() == saved_row["row"]["heldout_clean"]
    assert mean_ci(values["heldout_history"]).model_dump() == saved_row["row"]["cfr_gain_heldout"]
    assert mean_ci(values["cfr_gain"]).model_dump() == saved_row["row"]["cfr_gain"]
    per_player = [values["heldout_nearest_player0"], values["heldout_nearest_player1"]]
    assert [sum(v) / 2 for v in zip(*per_player, strict=True)] == pytest.approx(
        values["heldout_nearest"])
    # --render-only --heldout shows only rows that have the held-out gain.
    render = ["--llm", "fake", "--games", "3", "--steering-samples", "0", "--render-only",
              "--results", str(tmp_path / "res"), "--doc", str(doc),
              str(CONFIG_DIR / "trade_fruit_tone.yaml")]
    table1.main([*render, "--heldout"])
    assert "| `trade_fruit_tone` | 2 | 3 / 3 |" in doc.read_text(encoding="utf-8")
    saved = tmp_path / "res" / "trade_fruit_tone" / "table1_row.json"
    stored = json.loads(saved.read_text())
    stored["row"]["heldout_clean"] = None  # a row saved before the clean estimate existed
    saved.write_text(json.dumps(stored))
    table1.main([*render, "--heldout"])
    assert "| `trade_fruit_tone` |" not in doc.read_text(encoding="utf-8")
    table1.main(render)
    assert "| `trade_fruit_tone` | 2 | 3 / 3 |" in doc.read_text(encoding="utf-8")


def test_table1_says_per_domain_whether_the_clean_gain_survives_fresh_samples() -> None:
    table1 = load("table1")
    from gtsteer.solvers.metrics import mean_ci

    def row(domain: str, held: list[float] | None) -> Any:
        return table1.Row(config=f"gtsteer/configs/{domain}.yaml", domain=domain, games=3, solved=3,
                          cfr_gain=mean_ci([0.5, 0.7, 0.9]),
                          cfr_gain_heldout=None if held is None else mean_ci(held),
                          heldout_clean=None if held is None else mean_ci(held))

    rows = [row("real", [0.5, 0.6, 0.7]), row("noise", [-0.2, 0.0, 0.3]),
            row("worse", [-0.9, -0.8, -0.7]), row("unmeasured", None)]
    assert table1.heldout_summary(rows) == (
        "On fresh samples the clean estimate (the first mover's opening decision) is above 0:"
        " `real`; not distinguishable from 0: `noise`; below 0: `worse`.")
    assert table1.heldout_summary(rows[3:]) == "Held out so far: none."
    # Decisions that could only play `any` are named, with their share, in the cell and text.
    rows[1].heldout_unmatched_share = 0.25
    assert table1.heldout_cell(rows[1]).endswith("(25% of decisions unmatched)")
    assert table1.heldout_cell(rows[0]) == table1.ci(rows[0].cfr_gain_heldout)
    # A mean over fewer instances than were solved says so.
    rows[0].cfr_gain_heldout = mean_ci([0.5, 0.6])
    assert table1.heldout_cell(rows[0]).endswith("(n=2: some held-out trees failed)")
    assert table1.heldout_summary(rows).endswith(
        "pulls its gain toward 0: `noise` (25%) of the replayed decisions.")


def test_table1_gain_chart_plots_each_domains_interval_in_sample_and_held_out() -> None:
    table1 = load("table1")
    from gtsteer.solvers.metrics import mean_ci

    rows = [table1.Row(config="a.yaml", domain="a", games=3, solved=3, payoff_span=2.0,
                       cfr_gain_normalized=mean_ci([0.1, 0.2, 0.3]),
                       heldout_clean=mean_ci([-0.2, 0.0, 0.2]),
                       heldout_readers={"nearest": mean_ci([0.2, 0.4, 0.6])}),
            table1.Row(config="b.yaml", domain="b", games=3, solved=3,
                       cfr_gain_normalized=mean_ci([0.0, 0.0, 0.3]))]
    fig = table1.gain_figure(rows)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    in_sample, clean, nearest = ax.containers
    assert list(in_sample.lines[0].get_xdata()) == pytest.approx([0.2, 0.1])
    assert list(clean.lines[0].get_xdata()) == pytest.approx([0.0])  # b was not held out
    assert list(nearest.lines[0].get_xdata()) == pytest.approx([0.2])  # 0.4 / range 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "in-sample (the samples CFR chose from)", "fresh: clean (opening decision, exact replay)",
        "fresh: nearest-information-state replay"]


# ---- demo_outcomes ---------------------------------------------------------------------------


def test_demo_outcomes_decodes_payoffs_back_to_days(tmp_path: Path) -> None:
    demo = load("demo_outcomes")
    info = [{"out_of_office": "Sunday",
             "day_preferences": "Monday: 10, Tuesday: 9, Wednesday: 3, Thursday: 1, Friday: 3, "
                                "Saturday: 8, Sunday: 3"},
            {"out_of_office": "Tuesday, Friday",
             "day_preferences": "Monday: 4, Tuesday: 9, Wednesday: 10, Thursday: 8, Friday: 3, "
                                "Saturday: 5, Sunday: 3"}]
    games = tmp_path / "games"
    games.mkdir()
    (games / "0.json").write_text(json.dumps({"instance": {"private_info": info}}))

    def row(told: str, paid: list[float]) -> str:
        turns = [{"speaker": "Iris", "instruction": told, "text": "..."},
                 {"speaker": "Frank", "instruction": "any", "text": "..."}]
        return json.dumps({"turns": turns, "returns": paid})

    # Frank is away on Friday, so a Friday meeting pays both 0 (issue 57): Saturday is free.
    rows = [row("Saturday", [8.0, 5.0]), row("Saturday", [8.0, 5.0]),
            row("Saturday", [0.0, 0.0]),
            row("Wednesday", [10.0, 4.0]),  # read as Monday
            row("any", [0.0, 0.0])]
    (games / "0.terminals.jsonl").write_text("\n".join(rows) + "\n")
    table = demo.outcome_table(tmp_path, ROOT / "gtsteer" / "configs" / "schedule_meeting_dow.yaml")
    assert table.splitlines()[2:] == [
        "| nothing (`any`) | 1 | 0 | 0 |",
        "| Wednesday | 1 | 1 | 0 |",
        "| Saturday | 3 | 2 | 2 |",
    ]


# ---- bench_prefill ---------------------------------------------------------------------------


def test_bench_prefill_reads_its_numbers_and_says_only_what_they_allow() -> None:
    prefill = load("bench_prefill")
    flat = {"model": "m", "threads": 1,
            "gtsteer": {c: 100.0 for c in prefill.CHUNKS},
            "llama": {16: 110.0, 64: 120.0, 128: 125.0, 256: 130.0, 512: 118.0},
            "cross": {1: 120.0, 2: 124.0, 4: 126.0, 8: 132.0}}  # fmt: skip
    body = prefill.render([flat], "abc1234")
    assert "| m | 1 | 64 | 100 | 120 | 0.83x | 1.00x |" in body
    assert "| m | 1 | 256 | 100 | 130 | 0.77x | 1.08x |" in body
    assert "| m | 1 | 120 (1.00x) | 124 (1.03x) | 126 (1.05x) | 132 (1.10x) |" in body
    assert "more than 1.08x faster" in body and "at most 1.10x" in body
    assert "cannot make the prefill-bound jobs" in body
    steep = {**flat, "cross": {1: 100.0, 2: 150.0, 4: 190.0, 8: 200.0}}
    body = prefill.render([flat, steep], "abc1234")
    assert "at most 2.00x" in body and "would pay here" in body
    assert "cannot make" not in body


# ---- samples_study -----------------------------------------------------------------------------


def test_samples_study_rows_are_the_solves_in_sample_and_fresh_gains(
    tmp_path: Path, isolated_cache: Path
) -> None:
    study = load("samples_study")
    doc = tmp_path / "BENCH.md"
    res = tmp_path / "res"
    study.main([str(ROOT / "gtsteer/configs/debate.yaml"), "--llm", "fake", "--seeds", "1,2",
                "--games", "3", "--quiet", "--results", str(res), "--doc", str(doc)])
    rows = study.saved_rows(res, [1, 2])
    assert [(r.seeds, r.solved, r.games) for r in rows] == [(1, 3, 3), (2, 3, 3)]
    for r in rows:
        summary = json.loads((res / f"s{r.seeds}" / "run" / "summary.json").read_text())
        assert summary["num_llm_seeds"] == r.seeds  # the derived config was solved
        gains = summary["metrics"]["cfr_gain"]["per_instance"]
        fresh = summary["metrics"]["cfr_gain_heldout"]["per_instance"]
        assert r.cfr_gain.mean == pytest.approx(sum(gains) / 3)
        assert r.cfr_gain_heldout.mean == pytest.approx(sum(fresh) / 3)
        assert r.selection.mean == pytest.approx(r.cfr_gain.mean - r.cfr_gain_heldout.mean)
    # S = 1's tree and its fresh samples are S = 2's tree: those calls came from the cache.
    s2 = json.loads((res / "s2" / "run" / "summary.json").read_text())["llm_calls"]
    assert 0 < s2["new_calls"] < s2["requests"] and rows[1].new_calls == s2["new_calls"]
    text = doc.read_text(encoding="utf-8")
    assert text.count("<!-- samples_study_debate:start -->") == 1  # the config's own section
    assert f"| 2 | 3 / 3 | {study.ci(rows[1].cfr_gain)} |" in text
    assert "Reading (from the intervals): at S = 1 (3 instances)" in text
    assert "was measured by" not in text  # the header's command measured every row
    assert (tmp_path / "samples_study_debate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # One instance set at S = 1 and S = 2: the reading adds their paired difference.
    assert "Paired over the 3 instances both measured, S = 2 minus S = 1," in text
    # A rerun keeps a finished row (its calls and time) and measures only what is new.
    kept = (res / "s2" / study.ROW_FILE).read_text()
    study.main([str(ROOT / "gtsteer/configs/debate.yaml"), "--llm", "fake", "--seeds", "2,3",
                "--games", "3", "--quiet", "--results", str(res), "--doc", str(doc)])
    assert (res / "s2" / study.ROW_FILE).read_text() == kept
    assert [r.seeds for r in study.saved_rows(res, [1, 2, 3])] == [1, 2, 3]
    # --render-only redraws the same table without solving.
    before = [x for x in text.splitlines() if x.startswith("| 1 |")]
    study.main([str(ROOT / "gtsteer/configs/debate.yaml"), "--seeds", "1,2", "--render-only",
                "--results", str(res), "--doc", str(doc)])
    assert before == [x for x in doc.read_text().splitlines() if x.startswith("| 1 |")]
    # ... and names the command and machine that measured each row, which it did not run.
    rendered = doc.read_text()
    assert rendered.count("was measured by `python -m lab samples") == 2
    assert (f"S = 1 was measured by `python -m lab samples {ROOT / 'gtsteer/configs/debate.yaml'}"
            " --llm fake --seeds 1,2") in rendered and " CPUs (" in rendered


def test_samples_study_reuses_matching_records_of_another_run(
    tmp_path: Path, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--reuse: a Table 1 run's records at the same S are kept (no model call, the same
    values); records solved under another S do not match the run key and are solved anew."""
    study = load("samples_study")
    debate, doc = str(ROOT / "gtsteer/configs/debate.yaml"), str(tmp_path / "BENCH.md")
    first = tmp_path / "first"
    study.main([debate, "--llm", "fake", "--seeds", "1,2", "--games", "3", "--quiet",
                "--results", str(first), "--doc", doc])
    # Another session: an empty cache, so only the records can spare the calls.
    monkeypatch.setenv("GTSTEER_CACHE_DIR", str(tmp_path / "empty-cache"))
    second = tmp_path / "second"
    study.main([debate, "--llm", "fake", "--seeds", "2", "--games", "3", "--quiet",
                "--results", str(second), "--doc", doc, "--reuse", str(first / "s2" / "run")])
    kept, original = study.read_row(second, 2), study.read_row(first, 2)
    assert kept is not None and original is not None and kept.new_calls == 0
    assert kept.per_instance == original.per_instance
    assert kept.reused == 3
    assert "S = 2: 3 of the 3 instance records came from" in Path(doc).read_text()
    third = tmp_path / "third"  # S = 1's records offered to S = 2: another key, solved anew
    study.main([debate, "--llm", "fake", "--seeds", "2", "--games", "3", "--quiet",
                "--results", str(third), "--doc", doc, "--reuse", str(first / "s1" / "run")])
    again = study.read_row(third, 2)
    assert again is not None and again.new_calls > 0
    # None kept: the doc does not say they came from the other run.
    assert again.reused == 0 and "came from" not in Path(doc).read_text()
    # The same values solved again (the distilled replay trains an MLP, whose last digits
    # vary between trainings, so it is compared to a tolerance).
    assert again.per_instance.keys() == original.per_instance.keys()
    for key, values in original.per_instance.items():
        assert again.per_instance[key] == (
            pytest.approx(values, abs=1e-3) if "distilled" in key else values), key


def test_samples_study_paired_difference_needs_one_instance_set() -> None:
    study = load("samples_study")
    from gtsteer.solvers.metrics import mean_ci

    def row(seeds: int, instances: list[int], ins: list[float], fresh: list[float]) -> Any:
        m = mean_ci(ins)
        return study.StudyRow(
            seeds=seeds, games=3, solved=3, payoff_span=2.0, cfr_gain=m, cfr_gain_heldout=m,
            selection=m, new_calls=1, wall_s=1.0, llm="fake", commit="x", measured_at="now",
            instances=instances, per_instance={"heldout_clean_in_sample": ins,
                                               "heldout_clean": fresh})

    s2 = row(2, [0, 1, 2], [1.0, 2.0, 3.0], [0.0, 1.0, 1.0])
    s4 = row(4, [0, 1, 2], [1.0, 2.0, 2.0], [0.5, 1.5, 1.5])
    diffs = study.paired(s2, s4)
    fresh = diffs["the opening decision's fresh gain"]
    assert (fresh.n, fresh.mean) == (3, pytest.approx(0.5))
    selection = diffs["its selection (in-sample minus fresh)"]  # 1,1,2 then 0.5,0.5,0.5
    assert selection.mean == pytest.approx((0.5 + 0.5 + 1.5) / 3 * -1)
    assert study.paired(s2, row(4, [0, 1, 3], [1.0] * 3, [0.0] * 3)) == {}


def test_samples_study_reading_follows_the_intervals() -> None:
    study = load("samples_study")
    from gtsteer.solvers.metrics import mean_ci

    def row(seeds: int, gain: list[float], fresh: list[float]) -> Any:
        return study.StudyRow(
            seeds=seeds, games=3, solved=3, payoff_span=2.0, cfr_gain=mean_ci(gain),
            cfr_gain_heldout=mean_ci(fresh),
            selection=mean_ci([a - b for a, b in zip(gain, fresh, strict=True)]), new_calls=1,
            wall_s=1.0, llm="fake", commit="x", measured_at="now",
            clean=mean_ci(fresh), clean_in_sample=mean_ci(gain),
            clean_selection=mean_ci([a - b for a, b in zip(gain, fresh, strict=True)]))

    noisy = row(2, [0.9, 1.0, 1.1], [-0.1, 0.0, 0.1])     # all selection
    real = row(8, [0.5, 0.6, 0.7], [0.45, 0.6, 0.75])     # survives, no selection
    text = study.reading([noisy, real])
    assert ("at S = 2 (3 instances) the history replay's fresh gain holds 0 and in-sample minus"
            " it is above 0; the opening decision's fresh gain holds 0 and its selection is"
            " above 0") in text
    assert "at S = 8 (3 instances) the history replay's fresh gain is above 0" in text
    assert text.endswith("the two intervals do not overlap.")
    assert study.reading([noisy, noisy]).endswith("do not show it shrink or grow.")


# ---- bench_profile: the phase table from a real profile.json -----------------------------------


def test_bench_profile_renders_a_fake_runs_profile(tmp_path: Path) -> None:
    """A fake-model `solve --profile` gives the profile; at 1,000 prompt and 10 generated tokens/s
    each phase's "seconds at llama-bench rates" is evaluated / 1000 + generated / 10."""
    bench = load("bench_profile")
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "gtsteer", "solve", "schedule_meeting_dow",
                    "--llm", "fake", "--heldout", "--heldout-readers", "", "--profile", "-q",
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, timeout=300,
                   env={**os.environ, "GTSTEER_CACHE_DIR": str(tmp_path / "cache")})
    profile = json.loads((out / "profile.json").read_text())
    speed = {"pp": 1000.0, "tg": 10.0}
    section = bench.render(profile, speed, 12.0, "cmd", "abc", "fake", 2,
                           {"pp": 400.0, "tg": 50.0}, {"pp": 500.0, "tg": 100.0, "tg_seqs": 8.0})
    assert section.startswith(bench.START) and section.endswith(bench.END)
    # The fake model counts no novel tokens: the floor says so instead of reading 0.
    assert "| README job (solved tree) | " in section and "| not counted | | | | |" in section
    messages = profile["phases"]["messages"]
    assert messages["new_calls"] > 0 and messages["completion_tokens"] > 0
    expected = messages["prompt_tokens"] / 1000 + messages["completion_tokens"] / 10
    row = next(line for line in section.splitlines() if line.startswith("| messages |"))
    assert row.endswith(f"| {expected:.1f} |")
    fresh = [p for name, p in profile["phases"].items() if name.startswith("fresh: ")]
    total_row = next(line for line in section.splitlines() if "fresh tree**" in line)
    assert f"| {sum(p['new_calls'] for p in fresh):,} |" in total_row


def test_the_floors_are_novel_tokens_at_the_best_rates_against_the_profiled_seconds() -> None:
    """Bit for bit: 12,000 prompt tokens at the 64-token rate, 300/s, and 6,000 generated at the
    best batched rate, 100/s = 100 s. Any serving: the 20,000 novel prompt tokens at 500/s and
    the 5,000 novel generated at 100/s = 90 s. All 25,000 novel tokens at 500/s = 50 s. Against
    200 s of phases."""
    bench = load("bench_profile")
    zero = {"requests": 0, "new_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "generated_chars": 0, "kept_chars": 0}
    phases = [{**zero, "wall_s": 120.0, "tokens_novel": 15_000, "tokens_novel_generated": 5_000,
               "prompt_tokens_block_floor": 7_000, "prompt_tokens_evaluated": None,
               "completion_tokens": 6_000},
              {**zero, "wall_s": 80.0, "tokens_novel": 10_000, "tokens_novel_generated": None,
               "prompt_tokens_block_floor": 5_000, "prompt_tokens_evaluated": None}]
    total = bench._sum(phases)
    assert total["tokens_novel"] == 25_000 and total["wall_s"] == 200.0
    assert total["prompt_tokens_evaluated"] is None  # not reported: stays unknown, not 0
    single, best = {"pp": 300.0, "tg": 50.0}, {"pp": 500.0, "tg": 100.0}
    assert bench.floor_row("job", total, single, best) == (
        "| job | 200.0 | 12,000 | 25,000 (5,000) | 100.0 (0.50x) | 90.0 (0.45x) |"
        " 50.0 (0.25x) |")


def test_the_fastest_rates_are_taken_key_by_key_with_the_winning_sequence_count() -> None:
    bench = load("bench_profile")
    before = {"pp": 300.0, "tg": 170.0, "tg_seqs": 16.0}
    after = {"pp": 310.0, "tg": 180.0, "tg_seqs": 8.0}
    assert bench.fastest(before, after) == {"pp": 310.0, "tg": 180.0, "tg_seqs": 8.0}
    assert bench.fastest({"pp": 320.0, "tg": 110.0}, {"pp": 300.0, "tg": 120.0}) == {
        "pp": 320.0, "tg": 120.0}

