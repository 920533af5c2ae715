"""`python -m lab live-eval`: `gtsteer evaluate`'s fresh-dialogue table in a results page, from
per-instance files copied into docs/data.

`gtsteer imitate` and `gtsteer evaluate` run through the command line on the fake model on
tests/live_helpers.py's game, whose payoffs the two instructions decide (so the gains are not
all 0) and which has a greedy hook; the table's numbers are checked against a hand computation
from the copied instance files.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import statistics
from pathlib import Path

import pytest
from lab_support import lab
from live_helpers import live_config
from scipy import stats
from typer.testing import CliRunner

from gtsteer.cli import app
from lab.studies.live_eval import command_line

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`work/` holding a live config, `im/` (gtsteer imitate) and `ev/` (gtsteer evaluate),
    made with paths relative to `work/` as a user types them."""
    work = tmp_path_factory.mktemp("live") / "work"
    work.mkdir()
    config = live_config(work).name
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setenv("GTSTEER_CACHE_DIR", str(work.parent / "cache"))
        for argv in (["imitate", config, "--llm", "fake", "--games", "2", "--holdout", "0.5",
                      "--steps", "30", "--features", "struct", "-q", "--out", "im"],
                     ["evaluate", config, "--llm", "fake", "--policy", "im/model", "--games",
                      "3", "--samples", "2", "-q", "--out", "ev"]):
            done = runner.invoke(app, argv)
            assert done.exit_code == 0, done.output
    return work


def live_eval(*args: str) -> tuple[int, str]:
    done = runner.invoke(lab, ["live-eval", *args])
    return done.exit_code, done.output


def table(doc: Path) -> dict[tuple[str, str], list[str]]:
    """The section's table rows by (seat, baseline)."""
    rows = {}
    for line in doc.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[1].startswith("`"):
            rows[(cells[0], cells[1].strip("`"))] = cells[2:]
    return rows


def three(x: float) -> str:
    return f"{round(x, 3) + 0.0:+.3f}"


def by_hand(data: Path, player: int, baseline: str) -> tuple[list[float], float, float]:
    """The player's per-instance gains from the copied dialogues, and the t interval."""
    gains = []
    for path in sorted((data / "instances").glob("*.json")):
        row = json.loads(path.read_text())
        mine = [d["returns"][player] for d in row["dialogues"]
                if d["condition"] == "policy" and d["player"] == player]
        theirs = [d["returns"][player] for d in row["dialogues"] if d["condition"] == baseline
                  and d["player"] == (None if baseline == "any" else player)]
        assert len(mine) == len(theirs) == 2  # --samples 2
        gains.append(sum(mine) / 2 - sum(theirs) / 2)
    n, mean = len(gains), sum(gains) / len(gains)
    half = stats.t.ppf(0.975, n - 1) * statistics.stdev(gains) / math.sqrt(n)
    return gains, mean - half, mean + half


def test_the_table_is_the_hand_computation_from_the_copied_instance_files(
        runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(runs)
    (runs / "page.md").write_text("# Results\n\nkept text\n\n<!-- live_eval:start -->\nold\n"
                                  "<!-- live_eval:end -->\n\nafter\n")
    code, out = live_eval("--run", "ev", "--data", "data", "--doc", "page.md")
    assert code == 0, out
    data = runs / "data" / "mixed_2x2"
    assert sorted(p.name for p in (data / "instances").iterdir()) == sorted(
        p.name for p in (runs / "ev" / "instances").iterdir())
    for name in ("evaluate.json", "instances/" + next((data / "instances").iterdir()).name):
        assert (data / name).read_bytes() == (runs / "ev" / name).read_bytes()
    assert json.loads((data / "imitate" / "provenance.json").read_text())["command"] == "imitate"
    page = (runs / "page.md").read_text()
    assert page.startswith("# Results\n\nkept text\n") and page.endswith("\n\nafter\n")
    assert "\nold\n" not in page
    rows = table(runs / "page.md")
    assert set(rows) == {(seat, b) for seat in ("proposer", "responder")
                         for b in ("any", "greedy", "uniform")}
    for (seat, baseline), cells in rows.items():
        gains, low, high = by_hand(data, ["proposer", "responder"].index(seat), baseline)
        mean = sum(gains) / len(gains)
        assert cells[0] == three(mean)
        assert cells[1] == f"[{three(low)}, {three(high)}]"
        assert cells[2] == "3"
        assert cells[3] == (f"{sum(g > 0 for g in gains)} / {sum(g < 0 for g in gains)} / "
                            f"{sum(g == 0 for g in gains)}")
    assert any(cells[0] != "+0.000" for cells in rows.values())  # not all 0
    # the commands that made the run, as typed (defaults left out), and the model
    config = live_config(runs).name
    assert (f"gtsteer imitate {config} --llm fake --games 2 --holdout 0.5 --steps 30 "
            "--features struct --out im --quiet") in page
    assert (f"gtsteer evaluate {config} --policy im/model --games 3 --samples 2 --llm fake "
            "--out ev --quiet") in page
    assert "Models: writer `fake`; the policy (`struct` features)" in page


def test_render_only_rebuilds_the_section_from_docs_data_alone(
        runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert live_eval("--run", str(runs / "ev"), "--data", "data", "--doc", "a.md")[0] == 0
    first = (tmp_path / "a.md").read_text()
    (tmp_path / "a.md").unlink()
    code, out = live_eval("--render-only", "--data", "data", "--doc", "a.md")
    assert code == 0, out
    assert (tmp_path / "a.md").read_text() == first and "| proposer | `greedy` |" in first
    assert (tmp_path / "data").exists() and sorted(p.name for p in (tmp_path / "data").iterdir()
                                                   ) == ["mixed_2x2"]


def test_an_instance_file_that_disagrees_with_the_summary_is_refused(
        runs: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert live_eval("--run", str(runs / "ev"), "--data", str(data), "--doc",
                     str(tmp_path / "a.md"))[0] == 0
    path = next((data / "mixed_2x2" / "instances").iterdir())
    row = json.loads(path.read_text())
    dialogue = next(d for d in row["dialogues"] if d["condition"] == "policy")
    dialogue["returns"][dialogue["player"]] += 1.0
    original = path.read_text()
    path.write_text(json.dumps(row))
    code, out = live_eval("--render-only", "--data", str(data), "--doc", str(tmp_path / "b.md"))
    assert code == 2 and "its versus is not its dialogues' payoffs" in out
    assert len(out.strip().splitlines()) == 1
    row = json.loads(original)
    for d in row["dialogues"]:  # consistent rows, but not the summary's numbers
        d["returns"] = [r + 1.0 if d["condition"] == "policy" else r for r in d["returns"]]
    for v in row["versus"]:
        v["policy_value"] += 1.0
        v["gain"] += 1.0
    path.write_text(json.dumps(row))
    code, out = live_eval("--render-only", "--data", str(data), "--doc", str(tmp_path / "b.md"))
    assert code == 2 and "evaluate.json says" in out and not (tmp_path / "b.md").exists()


def test_a_retrained_or_missing_policy_is_refused(runs: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(runs / "ev", work / "ev")
    shutil.copytree(runs / "im", work / "im")
    shutil.copy(live_config(runs), work)  # the config, as given: relative to the run's folder
    weights = next(p for p in (work / "im" / "model").iterdir() if p.name != "config.json")
    weights.write_bytes(weights.read_bytes() + b"\0")
    code, out = live_eval("--run", str(work / "ev"), "--data", str(tmp_path / "data"),
                          "--doc", str(tmp_path / "a.md"))
    assert code == 2 and "not the one the run evaluated" in out
    shutil.rmtree(work / "im")
    code, out = live_eval("--run", str(work / "ev"), "--data", str(tmp_path / "data"),
                          "--doc", str(tmp_path / "a.md"))
    assert code == 2 and "is not found" in out and not (tmp_path / "data").exists()


def test_a_machine_folder_in_a_copied_file_is_refused(runs: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(runs, work, ignore=shutil.ignore_patterns("data", "*.md"))
    prov = work / "ev" / "provenance.json"
    record = json.loads(prov.read_text())
    record["params"]["out"] = "/home/someone/runs/ev"
    prov.write_text(json.dumps(record))
    code, out = live_eval("--run", str(work / "ev"), "--data", str(tmp_path / "data"),
                          "--doc", str(tmp_path / "a.md"))
    assert code == 2 and "/home/someone" in out and "folder of this machine" in out


def test_the_command_line_is_the_provenance_minus_defaults() -> None:
    prov = {"command": "evaluate", "config_given": "my config.yaml", "overrides": ["a=1"],
            "params": {"config": "/cache/x.yaml", "policy": "p/model", "games": 20,
                       "samples": 2, "resume": True, "quiet": False, "llm": None}}
    assert command_line(prov) == ("gtsteer evaluate 'my config.yaml' a=1 --policy p/model "
                                  "--samples 2 --resume")


def test_a_run_still_in_progress_is_refused(runs: Path, tmp_path: Path) -> None:
    shutil.copytree(runs / "ev", tmp_path / "ev")
    (tmp_path / "ev" / "IN_PROGRESS").touch()
    code, out = live_eval("--run", str(tmp_path / "ev"), "--data", str(tmp_path / "data"),
                          "--doc", str(tmp_path / "a.md"))
    assert code == 2 and "not a finished gtsteer evaluate run folder" in out


def test_one_domain_given_twice_or_nothing_to_do_is_a_usage_error(runs: Path) -> None:
    assert live_eval("--run", str(runs / "ev"), "--run", str(runs / "ev"))[0] == 2
    assert live_eval()[0] == 2
    code, out = live_eval("--render-only", "--data", str(runs / "nothing"))
    assert code == 2 and re.search(r"no copied evaluate run", out)
